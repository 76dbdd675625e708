//! Reading scenario files, with errors that name the file, the place and the fix.

use std::collections::HashSet;
use std::path::Path;

use super::format::{
    AgentSpec, Blocks, Content, ContextBlock, Scenario, Step, SystemEdit, ToolDef, Turn,
};
pub use crate::util::{line_col, snippet, ScenarioError};

/// Reads and structurally validates a scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = match crate::budget::read_text(path, "scenario") {
        Ok(text) => text,
        // Within the size limit but not UTF-8: the full reader says where.
        Err(crate::budget::InputError::NotUtf8 { .. }) => super::messages::read_text(path)
            .map_err(|utf8| ScenarioError::new(path, None, utf8.to_string()))?,
        Err(e) => {
            return Err(ScenarioError::new(path, None, e).with_hint(
                "check the path; `plancache run` with no argument replays scenarios/*.toml",
            ))
        }
    };
    load_str(&text, path)
}

/// Parses and structurally validates scenario text; `path` is used in messages and to resolve
/// `file = ...` contents.
pub fn load_str(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let scenario: Scenario = toml::from_str(text).map_err(|e| parse_error(text, path, &e))?;
    if let Ok(table) = text.parse::<toml::Table>() {
        let doc = toml::Value::Table(table);
        check_sizes(&doc, &mut String::new(), path)?;
        crate::budget::Budget::current().check_document(&doc, path)?;
    }
    validate(&scenario, text, path)?;
    Ok(scenario)
}

/// Largest size any `*tokens` field may take: ten times the longest context window on offer, so
/// a typo (an extra digit or three) is an error instead of an attempt to allocate gigabytes.
pub const MAX_TOKENS: i64 = 20_000_000;

/// Rejects any `*tokens` size above [`MAX_TOKENS`], naming its path in the document.
fn check_sizes(value: &toml::Value, at: &mut String, path: &Path) -> Result<(), ScenarioError> {
    match value {
        toml::Value::Table(t) => {
            for (key, v) in t {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(key);
                if let toml::Value::Float(x) = v {
                    // The format's only floats are rates (`timing.decode_tokens_per_s`).
                    if !x.is_finite() || *x <= 0.0 {
                        return Err(ScenarioError::new(
                            path,
                            Some(at.clone()),
                            format!("`{x}` is not a positive finite number"),
                        )
                        .with_hint("rates are numbers such as 60.0"));
                    }
                }
                if let toml::Value::Integer(n) = v {
                    if key.ends_with("tokens") && *n > MAX_TOKENS {
                        return Err(ScenarioError::new(
                            path,
                            Some(at.clone()),
                            format!("{n} tokens is larger than any prompt (limit {MAX_TOKENS})"),
                        )
                        .with_hint("sizes are in tokens; check for extra digits"));
                    }
                }
                check_sizes(v, at, path)?;
                at.truncate(len);
            }
        }
        toml::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("[{}]", i + 1));
                check_sizes(v, at, path)?;
                at.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

fn parse_error(text: &str, path: &Path, e: &toml::de::Error) -> ScenarioError {
    let place = e.span().map(|span| {
        let (line, col) = line_col(text, span.start);
        format!("line {line}, column {col}")
    });
    let message = super::messages::plain(e.message());
    let suggestion = unknown_field_suggestion(&message);
    let hint = if let Some((given, best)) = &suggestion {
        Some(format!(
            "rename `{given}` to `{best}`; `plancache schema` prints every allowed field"
        ))
    } else if message.contains("unknown field") {
        Some(
            "remove or rename the field; `plancache schema` prints every allowed field".to_string(),
        )
    } else if message.contains("wanted exactly 1 element") {
        Some("a [[steps]] table takes exactly one key (user, assistant, approve, decline, reject, edit, lead, mode, wait, agents, compact, edit_context, edit_system, add_tool, remove_tool, replace_tool, reorder_tools): look for a misspelled or extra key in the step that starts here".to_string())
    } else if message.contains("unknown variant") {
        Some("each [[steps]] table takes exactly one of: user, assistant, approve, decline, reject, edit, lead, mode, wait, agents, compact, edit_context, edit_system, add_tool, remove_tool, replace_tool, reorder_tools".to_string())
    } else if message.contains("missing field") {
        Some("add the field; see docs/scenario-format.md".to_string())
    } else {
        None
    };
    let mut err = ScenarioError::new(path, place, message.clone());
    if let Some(span) = e.span() {
        let label = match &suggestion {
            Some((_, best)) => format!("did you mean `{best}`?"),
            None => message.lines().next().unwrap_or("").to_string(),
        };
        err = err.with_snippet(text, span, &label);
    }
    if let Some(h) = hint {
        err = err.with_hint(h);
    }
    err
}

/// For serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a` or `b`"): the
/// unknown name and the closest allowed one, when one is close enough to be a typo.
fn unknown_field_suggestion(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (given, expected) = rest.split_once('`')?;
    let allowed: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    closest(given, &allowed).map(|best| (given.to_string(), best.to_string()))
}

/// The allowed name nearest to `given`, when near enough to be a typo (the test the CLI's
/// other did-you-mean hints use).
pub(crate) fn closest<'a>(given: &str, allowed: &[&'a str]) -> Option<&'a str> {
    crate::util::closest(given, allowed.iter().copied())
}

/// Where a model id is written in a scenario file: its 1-based line and column and the
/// snippet pointing at it (the first `"id"` string on a `model` key), for "unknown model"
/// errors raised after loading.
pub fn model_place(path: &Path, model: &str) -> Option<(usize, usize, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let quoted = format!("\"{model}\"");
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let key = line.trim_start();
        if key.starts_with("model") || line.contains("model =") || line.contains("model=") {
            if let Some(i) = line.find(&quoted) {
                let start = offset + i;
                let (l, c) = line_col(&text, start);
                let snip = snippet(
                    &text,
                    start..start + quoted.len(),
                    "not in the pricing table",
                );
                return Some((l, c, snip));
            }
        }
        offset += line.len();
    }
    None
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

/// A user message's content: any [`check_content`] block, which may also be a reminder.
fn check_message(c: &Content, what: &str, path: &Path) -> Result<(), ScenarioError> {
    check_content(
        &Content {
            reminder: false,
            ..c.clone()
        },
        what,
        path,
    )
}

fn check_content(c: &Content, what: &str, path: &Path) -> Result<(), ScenarioError> {
    if c.reminder {
        return Err(ScenarioError::new(
            path,
            Some(what.to_string()),
            "`reminder = true` marks a user message the harness appends after its breakpoint",
        )
        .with_hint("use it in a `user` step only; remove it here"));
    }
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
        // A device, FIFO or folder has no size to check and may never end: refused by name.
        let problem = match std::fs::metadata(&full) {
            Err(_) => Some("does not exist"),
            Ok(m) if !m.is_file() => Some("is not a regular file (a device, FIFO or folder)"),
            Ok(_) => None,
        };
        if let Some(problem) = problem {
            return Err(ScenarioError::new(
                path,
                Some(what.to_string()),
                format!("file `{}` {problem}", full.display()),
            )
            .with_hint(
                "name a text file; paths in `file = ...` are relative to the scenario file",
            ));
        }
    }
    Ok(())
}

/// The checks every scenario passes before it is replayed, however it was made (read from a
/// file, generated, imported or built in code); `text` is its file's text when it has one, for
/// the line of a step (empty otherwise).
pub(super) fn validate(s: &Scenario, text: &str, path: &Path) -> Result<(), ScenarioError> {
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
        check_tool_def(t, place, path)?;
    }
    let mut names = HashSet::new();
    for (i, c) in s.context.iter().enumerate() {
        let what = format!("context[{i}] ({})", c.name);
        if c.name.trim().is_empty() || !names.insert(c.name.as_str()) {
            return Err(ScenarioError::new(
                path,
                Some(what),
                "context block names must be non-empty and unique",
            )
            .with_hint("name each block, e.g. { name = \"CLAUDE.md\", tokens = 1800 }"));
        }
        check_content(&c.content(), &what, path)?;
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
    if s.keepalive_max_tokens > 1 {
        return Err(ScenarioError::new(
            path,
            Some("keepalive_max_tokens".into()),
            format!(
                "is {}; a keep-alive ping generates at most 1 token",
                s.keepalive_max_tokens
            ),
        )
        .with_hint("write keepalive_max_tokens = 0 (a pre-warm) or 1 (the default)"));
    }
    let lines = step_lines(text);
    if s.steps.is_empty() {
        return Err(ScenarioError::new(path, Some("steps".into()), "no steps")
            .with_hint("add [[steps]] tables; every `assistant` step is one API request"));
    }
    let mut tools: Vec<String> = s.tools.iter().map(|t| t.name.clone()).collect();
    let mut streams: HashSet<String> = HashSet::from(["main".to_string()]);
    for (i, step) in s.steps.iter().enumerate() {
        let place = step_place(&lines, i);
        check_step(s, step, &place, &mut tools, &mut streams, None, path)?;
    }
    Ok(())
}

fn check_tool_def(t: &ToolDef, place: Option<String>, path: &Path) -> Result<(), ScenarioError> {
    let described = t.description.is_some() || t.schema.is_some();
    if described == t.tokens.is_some() {
        return Err(ScenarioError::new(
            path,
            place,
            "give either `tokens` or `description`/`schema`",
        )
        .with_hint("e.g. tokens = 420, or description = \"...\" with schema = { ... }"));
    }
    Ok(())
}

/// Where a step is checked: its scenario and file, its place, and the subagent it belongs to.
#[derive(Clone, Copy)]
struct StepCheck<'a> {
    /// The scenario the step belongs to (its `context` blocks, its system prompt).
    s: &'a Scenario,
    /// The scenario file, for errors.
    path: &'a Path,
    /// Where the step is, for errors ("line 12 (step 3)").
    place: &'a str,
    /// The subagent's name and tools when the step belongs to one.
    agent: Option<(&'a str, &'a [String])>,
}

impl StepCheck<'_> {
    fn err(&self, message: String) -> ScenarioError {
        ScenarioError::new(self.path, Some(self.place.to_string()), message)
    }
}

/// Checks one step; `tools` is the toolset in force (updated by `add_tool` / `remove_tool`),
/// `agent` the subagent's name and tools when the step belongs to one.
fn check_step(
    s: &Scenario,
    step: &Step,
    place: &str,
    tools: &mut Vec<String>,
    streams: &mut HashSet<String>,
    agent: Option<(&str, &[String])>,
    path: &Path,
) -> Result<(), ScenarioError> {
    let c = StepCheck {
        s,
        path,
        place,
        agent,
    };
    if agent.is_some() && !matches!(step, Step::User(_) | Step::Assistant(_) | Step::Wait(_)) {
        return Err(c.err("a subagent step must be `user`, `assistant` or `wait`".into())
            .with_hint("plan-mode answers, mode switches, context events and nested agents belong to the main stream"));
    }
    match step {
        Step::User(m) | Step::Reject(m) => check_message(&m.clone().into_content(), place, path),
        Step::Assistant(turn) => check_assistant(c, turn, tools),
        Step::Edit(p) if p.plan_tokens.is_some() == p.plan.is_some() => {
            Err(c.err("an edit needs exactly one of `plan_tokens` or `plan`".into()))
        }
        Step::Compact(m) if m.summary_tokens.is_some() == m.summary.is_some() => Err(c
            .err("a compaction needs exactly one of `summary_tokens` or `summary`".into())
            .with_hint("e.g. compact = { summary_tokens = 3000 }")),
        Step::EditContext(b) => check_edit_context(c, b),
        Step::AddTool(t) => check_add_tool(c, t, tools),
        Step::Wait(w) if agent.is_some() && w.keepalive().is_some() => Err(c
            .err("keepalive pings are modelled on main-stream waits only".into())
            .with_hint("drop `keepalive` from the subagent's wait, or write `wait = \"3m\"`")),
        Step::EditSystem(e) => check_system_edit(s, e, place, path),
        Step::ReplaceTool(t) => check_replace_tool(c, t, tools),
        Step::ReorderTools(names) => check_reorder(c, names, tools),
        Step::RemoveTool(name) => check_remove_tool(c, name, tools),
        Step::Agents(agents) => check_agents(c, agents, tools, streams),
        _ => Ok(()),
    }
}

/// An `assistant` step: one of `tokens` / `text`, and calls of tools offered at this point.
fn check_assistant(c: StepCheck<'_>, turn: &Turn, tools: &[String]) -> Result<(), ScenarioError> {
    if turn.tokens.is_some() == turn.text.is_some() {
        return Err(c
            .err("an assistant step needs exactly one of `tokens` or `text`".into())
            .with_hint("e.g. assistant = { tokens = 120, calls = [...] }"));
    }
    let offered: &[String] = match c.agent {
        Some((_, t)) => t,
        None => tools,
    };
    for (j, call) in turn.calls.iter().enumerate() {
        if !offered.contains(&call.tool) {
            let hint = match c.agent {
                Some((name, _)) => format!("add `{}` to agent {name}'s `tools`", call.tool),
                None => {
                    "add a [[tools]] entry (or an `add_tool` step before this one), or fix the name"
                        .to_string()
                }
            };
            return Err(c
                .err(format!(
                    "call {} uses tool `{}`, which is not offered at this point",
                    j + 1,
                    call.tool
                ))
                .with_hint(hint));
        }
        if call.result_tokens.is_some() && call.result.is_some() {
            return Err(c.err(format!(
                "call {} gives both `result_tokens` and `result`",
                j + 1
            )));
        }
        if call.plan_tokens.is_some() && call.plan.is_some() {
            return Err(c.err(format!(
                "call {} gives both `plan_tokens` and `plan`",
                j + 1
            )));
        }
    }
    Ok(())
}

/// An `edit_context` step names a declared context block.
fn check_edit_context(c: StepCheck<'_>, b: &ContextBlock) -> Result<(), ScenarioError> {
    if !c.s.context.iter().any(|d| d.name == b.name) {
        return Err(c
            .err(format!(
                "edit_context names `{}`, which is not a scenario `context` block",
                b.name
            ))
            .with_hint("declare it first: context = [{ name = \"CLAUDE.md\", tokens = 1800 }]"));
    }
    check_content(&b.content(), c.place, c.path)
}

fn check_add_tool(
    c: StepCheck<'_>,
    t: &ToolDef,
    tools: &mut Vec<String>,
) -> Result<(), ScenarioError> {
    if tools.contains(&t.name) {
        return Err(c
            .err(format!(
                "add_tool `{}`: the tool is already offered",
                t.name
            ))
            .with_hint("remove it first with remove_tool, or pick another name"));
    }
    check_tool_def(t, Some(c.place.to_string()), c.path)?;
    tools.push(t.name.clone());
    Ok(())
}

fn check_replace_tool(
    c: StepCheck<'_>,
    t: &ToolDef,
    tools: &[String],
) -> Result<(), ScenarioError> {
    if !tools.contains(&t.name) {
        return Err(c.err(format!(
            "replace_tool `{}`: no such tool is offered at this point",
            t.name
        ))
        .with_hint("check the name against [[tools]] and earlier add_tool/remove_tool steps; add_tool adds a new one"));
    }
    check_tool_def(t, Some(c.place.to_string()), c.path)
}

/// A `reorder_tools` step: two or more distinct offered tools, which swap places in `tools`.
fn check_reorder(
    c: StepCheck<'_>,
    names: &[String],
    tools: &mut [String],
) -> Result<(), ScenarioError> {
    if names.len() < 2 {
        return Err(c.err("reorder_tools needs at least two tool names".into())
            .with_hint("e.g. reorder_tools = [\"mcp__b__search\", \"mcp__a__query\"]: the listed tools swap places"));
    }
    let mut seen = HashSet::new();
    for n in names {
        if !seen.insert(n.as_str()) {
            return Err(c.err(format!("reorder_tools lists `{n}` twice")));
        }
        if !tools.contains(n) {
            return Err(c
                .err(format!(
                    "reorder_tools `{n}`: no such tool is offered at this point"
                ))
                .with_hint(
                    "check the name against [[tools]] and earlier add_tool/remove_tool steps",
                ));
        }
    }
    let mut slots: Vec<usize> = tools
        .iter()
        .enumerate()
        .filter(|(_, t)| seen.contains(t.as_str()))
        .map(|(i, _)| i)
        .collect();
    slots.sort_unstable();
    for (slot, n) in slots.into_iter().zip(names) {
        tools[slot] = n.clone();
    }
    Ok(())
}

fn check_remove_tool(
    c: StepCheck<'_>,
    name: &str,
    tools: &mut Vec<String>,
) -> Result<(), ScenarioError> {
    let Some(pos) = tools.iter().position(|t| t == name) else {
        return Err(c
            .err(format!("remove_tool `{name}`: no such tool is offered"))
            .with_hint("check the name against [[tools]] and earlier add_tool steps"));
    };
    tools.remove(pos);
    Ok(())
}

/// An `agents` step: at least one agent, each checked with its own steps.
fn check_agents(
    c: StepCheck<'_>,
    agents: &[AgentSpec],
    tools: &[String],
    streams: &mut HashSet<String>,
) -> Result<(), ScenarioError> {
    if agents.is_empty() {
        return Err(c.err("`agents` launches no agent".into())
            .with_hint("give at least one { name = ..., system = ..., tools = [...], prompt = ..., steps = [...] }"));
    }
    agents
        .iter()
        .try_for_each(|a| check_agent(c, a, tools, streams))
}

/// One subagent: a unique name, a launching tool and tools the main stream offers, a system
/// prompt, and steps that make a request.
fn check_agent(
    c: StepCheck<'_>,
    a: &AgentSpec,
    tools: &[String],
    streams: &mut HashSet<String>,
) -> Result<(), ScenarioError> {
    let what = format!("{}, agent `{}`", c.place, a.name);
    let aerr = |m: String| ScenarioError::new(c.path, Some(what.clone()), m);
    if a.name.trim().is_empty() || !streams.insert(a.name.clone()) {
        return Err(aerr(
            "agent names must be non-empty and unique in the session (and not `main`)".into(),
        ));
    }
    if !tools.contains(&a.tool) {
        return Err(aerr(format!(
            "the launching tool `{}` is not offered to the main stream",
            a.tool
        ))
        .with_hint("add a [[tools]] entry named Agent (access = \"read\"), or set `tool`"));
    }
    check_agent_tools(a, tools, &aerr)?;
    let blocks = a.system.to_vec();
    if blocks.is_empty() {
        return Err(aerr("the agent's system prompt has no blocks".into()));
    }
    for b in &blocks {
        check_content(b, &what, c.path)?;
    }
    check_content(&a.prompt.clone().into_content(), &what, c.path)?;
    if let Some(env) = &a.environment {
        check_content(env, &format!("{what} environment"), c.path)?;
    }
    for (k, st) in a.steps.iter().enumerate() {
        let inner = format!("{what} step {}", k + 1);
        let mut agent_tools = tools.to_vec();
        let own = Some((a.name.as_str(), a.tools.as_slice()));
        check_step(c.s, st, &inner, &mut agent_tools, streams, own, c.path)?;
    }
    if !a.steps.iter().any(|st| matches!(st, Step::Assistant(_))) {
        return Err(aerr(
            "the agent makes no request (no `assistant` step)".into(),
        ));
    }
    Ok(())
}

/// A subagent's tools: the session's, never the plan-mode tools or the launching tool.
fn check_agent_tools(
    a: &AgentSpec,
    tools: &[String],
    aerr: &dyn Fn(String) -> ScenarioError,
) -> Result<(), ScenarioError> {
    for t in &a.tools {
        if t == crate::plan_mode::ENTER_PLAN_MODE
            || t == crate::plan_mode::EXIT_PLAN_MODE
            || *t == a.tool
        {
            return Err(
                aerr(format!("agent tool `{t}` cannot be given to a subagent"))
                    .with_hint("subagents neither change the plan mode nor launch agents"),
            );
        }
        if !tools.contains(t) {
            return Err(aerr(format!(
                "agent tool `{t}` is not one of the session's tools"
            ))
            .with_hint("subagents get tools from the session's [[tools]] list"));
        }
    }
    Ok(())
}

/// An `edit_system` step: a block that exists, and either a replacement or a patch.
fn check_system_edit(
    s: &Scenario,
    e: &SystemEdit,
    place: &str,
    path: &Path,
) -> Result<(), ScenarioError> {
    let err = |message: String| ScenarioError::new(path, Some(place.to_string()), message);
    let blocks = s.system.to_vec();
    if e.block == 0 || e.block > blocks.len() {
        return Err(err(format!(
            "edit_system block {} does not exist: the system prompt has {} block(s), numbered from 1",
            e.block,
            blocks.len()
        ))
        .with_hint("e.g. edit_system = { block = 1, patch_at = 1830, patch_tokens = 12 }"));
    }
    let patch = e.patch_at.is_some() || e.patch_tokens.is_some();
    match (e.replacement(), patch) {
        (Some(_), true) | (None, false) => Err(err(
            "edit_system needs either a replacement (`tokens`, `text` or `file`) or a patch (`patch_at` and `patch_tokens`)".into(),
        )
        .with_hint("e.g. edit_system = { block = 2, tokens = 1200 } or { block = 2, patch_at = 1830, patch_tokens = 12 }")),
        (Some(c), false) => check_content(&c, place, path),
        (None, true) => {
            let (Some(at), Some(n)) = (e.patch_at, e.patch_tokens) else {
                return Err(err("a patch needs both `patch_at` and `patch_tokens`".into())
                    .with_hint("e.g. { block = 1, patch_at = 1830, patch_tokens = 12 }"));
            };
            if n == 0 {
                return Err(err("`patch_tokens` is 0: the patch changes nothing".into()));
            }
            if e.cache_control.is_some() {
                return Err(err("a patch keeps the block's breakpoint; `cache_control` goes with a replacement".into()));
            }
            if let Some(size) = blocks[e.block - 1].tokens {
                if u64::from(at) + u64::from(n) > u64::from(size) {
                    return Err(err(format!(
                        "the patch spans tokens {at}..{} but system block {} has {size} tokens",
                        u64::from(at) + u64::from(n),
                        e.block
                    ))
                    .with_hint("keep patch_at + patch_tokens within the block"));
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_sizes_are_rejected_with_their_path() {
        let text = "name = \"x\"\nmodel = \"m\"\nsystem = { tokens = 10 }\ntools = [{ name = \"Read\", tokens = 10 }]\n[[steps]]\nuser = \"hi\"\n[[steps]]\nassistant = { tokens = 5, calls = [{ tool = \"Read\", result_tokens = 4000000000 }] }\n";
        let err = load_str(text, Path::new("s.toml")).unwrap_err();
        assert_eq!(
            err.place.as_deref(),
            Some("steps[2].assistant.calls[1].result_tokens")
        );
        assert!(err.message.contains("4000000000 tokens"), "{}", err.message);
    }

    #[test]
    fn non_finite_or_negative_rates_are_rejected_with_their_path() {
        for bad in ["nan", "inf", "-inf", "-5.0", "0.0"] {
            let text = format!("name = \"x\"\nmodel = \"m\"\nsystem = {{ tokens = 10 }}\ntools = []\n[timing]\ndecode_tokens_per_s = {bad}\n[[steps]]\nuser = \"hi\"\n");
            let err = load_str(&text, Path::new("s.toml")).unwrap_err();
            assert_eq!(
                err.place.as_deref(),
                Some("timing.decode_tokens_per_s"),
                "{bad}"
            );
        }
    }

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

    #[test]
    fn a_misspelled_field_gets_the_nearest_name_and_a_caret() {
        // `result_token` on line 3 of a call: serde lists the allowed fields, the nearest is
        // `result_tokens` (one letter short).
        let text = "name = \"x\"\nmodel = \"m\"\nsystem = { tokens = 10 }\n[[steps]]\nassistant = { tokens = 5, calls = [{ tool = \"Read\", result_token = 40 }] }\n";
        let err = load_str(text, Path::new("s.toml")).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.starts_with("s.toml: line 5, column 53: unknown field `result_token`"),
            "{shown}"
        );
        assert!(
            shown.contains("hint: rename `result_token` to `result_tokens`"),
            "{shown}"
        );
        // The snippet: the line under its number, a caret run under `result_token` (12 wide,
        // from column 53: `assistant = { tokens = 5, calls = [{ tool = "Read", ` is 52 long).
        let caret = format!(
            "{}{} did you mean `result_tokens`?",
            " ".repeat(52),
            "^".repeat(12)
        );
        assert!(shown.contains("5 | assistant = { tokens = 5"), "{shown}");
        assert!(
            shown
                .lines()
                .any(|l| l.ends_with(&caret) && l.trim_start().starts_with('|')),
            "{shown}"
        );
    }

    #[test]
    fn a_syntax_error_shows_its_line_with_a_caret() {
        let text = "name = \"x\"\nseed = = 7\n";
        let err = load_str(text, Path::new("s.toml")).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with("s.toml: line 2, column 8: "), "{shown}");
        assert!(shown.contains("2 | seed = = 7"), "{shown}");
        // Column 8 is under the second `=`: "seed = " is 7 characters.
        assert!(
            shown
                .lines()
                .any(|l| l.starts_with("  |") && l[3..].starts_with("        ^")),
            "{shown}"
        );
    }

    #[test]
    fn closest_name_needs_a_near_match() {
        assert_eq!(
            closest("result_token", &["tool", "result_tokens"]),
            Some("result_tokens")
        );
        assert_eq!(closest("zzz", &["tool", "result_tokens"]), None);
    }
}
