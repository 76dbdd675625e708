//! Reading scenario files, with errors that name the file, the place and the fix.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use super::format::{Blocks, Content, Scenario, Step};

/// A scenario that could not be read or is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// `line:column`, or a path into the document such as `step 7 (line 42)`.
    pub place: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(place) = &self.place {
            write!(f, ": {place}")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    pub fn new(file: &Path, place: Option<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.to_path_buf(),
            place,
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// Reads and structurally validates a scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioError::new(path, None, format!("cannot read scenario: {e}"))
            .with_hint("check the path; `plancache run` with no argument replays scenarios/*.toml")
    })?;
    load_str(&text, path)
}

/// Parses and structurally validates scenario text; `path` is used in messages and to resolve
/// `file = ...` contents.
pub fn load_str(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let scenario: Scenario = toml::from_str(text).map_err(|e| parse_error(text, path, &e))?;
    validate(&scenario, text, path)?;
    Ok(scenario)
}

fn parse_error(text: &str, path: &Path, e: &toml::de::Error) -> ScenarioError {
    let place = e.span().map(|span| {
        let (line, col) = line_col(text, span.start);
        format!("line {line}, column {col}")
    });
    let message = e.message().to_string();
    let hint = if message.contains("unknown field") {
        Some("remove or rename the field; `plancache schema` prints every allowed field")
    } else if message.contains("wanted exactly 1 element") {
        Some("a [[steps]] table takes exactly one key (user, assistant, approve, decline, reject, edit, lead, mode, wait): look for a misspelled or extra key in the step that starts here")
    } else if message.contains("unknown variant") {
        Some("each [[steps]] table takes exactly one of: user, assistant, approve, decline, reject, edit, lead, mode, wait")
    } else if message.contains("missing field") {
        Some("add the field; see docs/scenario-format.md")
    } else {
        None
    };
    let mut err = ScenarioError::new(path, place, message);
    if let Some(h) = hint {
        err = err.with_hint(h);
    }
    err
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, col)
}

/// Line numbers (1-based) of each `[[steps]]` header, in order; empty for inline arrays.
pub(crate) fn step_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("[[steps]]"))
        .map(|(i, _)| i + 1)
        .collect()
}

/// Human place of step `index` (0-based): `step 7 (line 42)`.
pub(crate) fn step_place(lines: &[usize], index: usize) -> String {
    match lines.get(index) {
        Some(line) => format!("step {} (line {line})", index + 1),
        None => format!("step {}", index + 1),
    }
}

fn check_content(c: &Content, what: &str, path: &Path) -> Result<(), ScenarioError> {
    let given = [c.tokens.is_some(), c.text.is_some(), c.file.is_some()]
        .iter()
        .filter(|g| **g)
        .count();
    if given != 1 {
        return Err(ScenarioError::new(
            path,
            Some(what.to_string()),
            format!("needs exactly one of `tokens`, `text` or `file` (found {given})"),
        )
        .with_hint("write e.g. { tokens = 7000 } or { text = \"...\" } or { file = \"prompts/system.md\" }"));
    }
    if let Some(file) = &c.file {
        let full = path.parent().unwrap_or(Path::new(".")).join(file);
        if !full.is_file() {
            return Err(ScenarioError::new(
                path,
                Some(what.to_string()),
                format!("file `{}` does not exist", full.display()),
            )
            .with_hint("paths in `file = ...` are relative to the scenario file"));
        }
    }
    Ok(())
}

fn validate(s: &Scenario, text: &str, path: &Path) -> Result<(), ScenarioError> {
    if s.name.trim().is_empty() {
        return Err(ScenarioError::new(path, Some("name".into()), "is empty"));
    }
    let blocks = |b: &Blocks, what: &str| -> Result<(), ScenarioError> {
        let v = b.to_vec();
        if v.is_empty() {
            return Err(ScenarioError::new(path, Some(what.into()), "has no blocks"));
        }
        for (i, c) in v.iter().enumerate() {
            check_content(c, &format!("{what}[{i}]"), path)?;
        }
        Ok(())
    };
    blocks(&s.system, "system")?;
    if let Some(p) = &s.plan_system {
        blocks(p, "plan_system")?;
    }
    let mut seen = HashSet::new();
    for (i, t) in s.tools.iter().enumerate() {
        let place = Some(format!("tools[{i}] ({})", t.name));
        if !seen.insert(t.name.as_str()) {
            return Err(ScenarioError::new(path, place, "duplicate tool name")
                .with_hint("each tool is listed once, in prompt order"));
        }
        let described = t.description.is_some() || t.schema.is_some();
        if described == t.tokens.is_some() {
            return Err(ScenarioError::new(
                path,
                place,
                "give either `tokens` or `description`/`schema`",
            )
            .with_hint("e.g. tokens = 420, or description = \"...\" with schema = { ... }"));
        }
    }
    check_content(&s.reminders.plan_enter, "reminders.plan_enter", path)?;
    check_content(&s.reminders.plan_exit, "reminders.plan_exit", path)?;
    check_content(&s.reminders.denied, "reminders.denied", path)?;
    check_content(
        &s.reminders.enter_approved,
        "reminders.enter_approved",
        path,
    )?;
    check_content(
        &s.reminders.enter_declined,
        "reminders.enter_declined",
        path,
    )?;
    let lines = step_lines(text);
    if s.steps.is_empty() {
        return Err(ScenarioError::new(path, Some("steps".into()), "no steps")
            .with_hint("add [[steps]] tables; every `assistant` step is one API request"));
    }
    for (i, step) in s.steps.iter().enumerate() {
        let place = || Some(step_place(&lines, i));
        match step {
            Step::User(c) | Step::Reject(c) => {
                check_content(&c.clone().into_content(), &step_place(&lines, i), path)?
            }
            Step::Assistant(turn) => {
                if turn.tokens.is_some() == turn.text.is_some() {
                    return Err(ScenarioError::new(
                        path,
                        place(),
                        "an assistant step needs exactly one of `tokens` or `text`",
                    )
                    .with_hint("e.g. assistant = { tokens = 120, calls = [...] }"));
                }
                for (j, call) in turn.calls.iter().enumerate() {
                    if !s.tools.iter().any(|t| t.name == call.tool) {
                        return Err(ScenarioError::new(
                            path,
                            place(),
                            format!(
                                "call {} uses tool `{}`, which is not in `tools`",
                                j + 1,
                                call.tool
                            ),
                        )
                        .with_hint("add a [[tools]] entry for it, or fix the name"));
                    }
                    if call.result_tokens.is_some() && call.result.is_some() {
                        return Err(ScenarioError::new(
                            path,
                            place(),
                            format!("call {} gives both `result_tokens` and `result`", j + 1),
                        ));
                    }
                    if call.plan_tokens.is_some() && call.plan.is_some() {
                        return Err(ScenarioError::new(
                            path,
                            place(),
                            format!("call {} gives both `plan_tokens` and `plan`", j + 1),
                        ));
                    }
                }
            }
            Step::Edit(p) if p.plan_tokens.is_some() == p.plan.is_some() => {
                return Err(ScenarioError::new(
                    path,
                    place(),
                    "an edit needs exactly one of `plan_tokens` or `plan`",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn unknown_field_names_line_and_hint() {
        let text = "name = \"x\"\nmodel = \"m\"\nsystem = { tokens = 10 }\ntools = []\nbogus = 1\n[[steps]]\nuser = \"hi\"\n";
        let err = load_str(text, Path::new("s.toml")).unwrap_err();
        assert_eq!(err.place.as_deref(), Some("line 5, column 1"));
        assert!(
            err.message.contains("unknown field `bogus`"),
            "{}",
            err.message
        );
        assert!(err.hint.is_some());
    }
}
