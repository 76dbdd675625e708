//! A scenario made ready for replay: segments built once and shared by every strategy.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::{Access, Content, ContextBlock, Scenario, ToolDef};
use super::load::{step_lines, step_place, ScenarioError};
use super::turns::TurnSegments;
use crate::plan_mode::PlanFiles;
use crate::prompt::{Level, Role, Segment, SegmentKind, TokenSource, Tokenizer};

pub use crate::prompt::ENVIRONMENT_SUFFIX;

/// Write tools by name when a scenario does not say (Claude Code's file- and system-changing tools).
pub const DEFAULT_WRITE_TOOLS: &[&str] = &["Edit", "Write", "Bash", "NotebookEdit", "MultiEdit"];

/// One tool with its access and its prompt segment.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// Whether it reads or writes (plan mode denies write tools).
    pub access: Access,
    /// Listed as a stub and loaded on demand (strategies that defer tools).
    pub deferred: bool,
    /// Its definition, tokenized: the segment every request's tool list carries.
    pub segment: Arc<Segment>,
}

/// A loaded scenario with its segments.
#[derive(Debug)]
pub struct Session {
    /// The scenario as loaded and checked. The rest of the session is made from it (tools,
    /// system, step lines, the turns' segments), so a scenario whose steps, tools or contents
    /// change needs a new session ([`Session::new`]); its name may change freely.
    pub scenario: Scenario,
    /// The file it came from (for messages), or a label.
    pub path: PathBuf,
    /// The tokenizer of the scenario's model, shared by every segment.
    pub tokenizer: Arc<Tokenizer>,
    /// The tool definitions, in prompt order.
    pub tools: Vec<Tool>,
    /// The system prompt's blocks, in prompt order.
    pub system: Vec<Arc<Segment>>,
    /// The scenario's plan-mode system prompt, if it gives one (`system-swap`).
    pub plan_system: Option<Vec<Arc<Segment>>>,
    /// The reminder a user message carries on entering plan mode.
    pub plan_enter_reminder: Arc<Segment>,
    /// The reminder a user message carries on leaving plan mode.
    pub plan_exit_reminder: Arc<Segment>,
    /// The error result of a tool call the permission layer denies.
    pub denied_result: Arc<Segment>,
    /// The tool result of an approved `EnterPlanMode` call.
    pub enter_approved_result: Arc<Segment>,
    /// The tool result of a declined `EnterPlanMode` call.
    pub enter_declined_result: Arc<Segment>,
    /// Early context blocks (name, segment), injected at the start of the messages.
    pub context: Vec<(String, Arc<Segment>)>,
    /// Where this session's plan files live and what they are called.
    pub plan_files: PlanFiles,
    /// The main stream's assistant turns' segments, made by the first replay that needs them
    /// and shared by the others.
    pub turns: TurnSegments,
    step_lines: Vec<usize>,
}

/// Makes segments for one scenario file (resolves `file = ...` relative to it).
struct SegmentMaker<'a> {
    path: &'a Path,
    tokenizer: &'a Tokenizer,
}

impl SegmentMaker<'_> {
    fn content(
        &self,
        level: Level,
        kind: SegmentKind,
        label: &str,
        c: &Content,
    ) -> Result<Arc<Segment>, ScenarioError> {
        let source = if let Some(n) = c.tokens {
            TokenSource::Count(n)
        } else if let Some(t) = &c.text {
            TokenSource::Text(t.clone())
        } else if let Some(f) = &c.file {
            let full = self.path.parent().unwrap_or(Path::new(".")).join(f);
            check_file_size(self.path, label, &full)?;
            let text = std::fs::read_to_string(&full).map_err(|e| {
                ScenarioError::new(
                    self.path,
                    Some(label.to_string()),
                    format!("cannot read `{}`: {e}", full.display()),
                )
                .with_hint("paths in `file = ...` are relative to the scenario file")
            })?;
            TokenSource::Text(text)
        } else {
            TokenSource::Count(0)
        };
        Ok(self.segment(level, kind, label, source, c.cache_control))
    }

    fn segment(
        &self,
        level: Level,
        kind: SegmentKind,
        label: &str,
        source: TokenSource,
        breakpoint: Option<crate::prompt::Ttl>,
    ) -> Arc<Segment> {
        self.tokenizer
            .segment(level, kind, label, source, breakpoint)
    }

    fn blocks(&self, blocks: &[Content], prefix: &str) -> Result<Vec<Arc<Segment>>, ScenarioError> {
        blocks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.content(
                    Level::System,
                    SegmentKind::System,
                    &format!("{prefix}#{}", i + 1),
                    c,
                )
            })
            .collect()
    }

    fn tool(&self, t: &ToolDef) -> Result<Arc<Segment>, ScenarioError> {
        self.tool_labelled(t, format!("tool:{}", t.name))
    }

    fn tool_labelled(&self, t: &ToolDef, label: String) -> Result<Arc<Segment>, ScenarioError> {
        let source = match t.tokens {
            Some(n) => TokenSource::Count(n),
            None => {
                let schema = match &t.schema {
                    Some(v) => serde_json::to_string(v).map_err(|e| {
                        ScenarioError::new(
                            self.path,
                            Some(label.clone()),
                            format!("schema is not JSON-compatible: {e}"),
                        )
                    })?,
                    None => String::new(),
                };
                TokenSource::Text(format!(
                    "{}\n{}\n{}",
                    t.name,
                    t.description.as_deref().unwrap_or(""),
                    schema
                ))
            }
        };
        Ok(self.segment(
            Level::Tools,
            SegmentKind::Tool,
            &label,
            source,
            t.cache_control,
        ))
    }
}

impl Session {
    /// Builds the segments of a scenario read from `path` (whose text is `text`).
    pub fn new(
        scenario: Scenario,
        path: &Path,
        text: &str,
        tokenizer: Arc<Tokenizer>,
    ) -> Result<Self, ScenarioError> {
        crate::budget::check_scenario(&scenario, path)?;
        // The engine relies on these checks and does not repeat them.
        super::load::validate(&scenario, text, path)?;
        let make = SegmentMaker {
            path,
            tokenizer: &tokenizer,
        };
        let tools = scenario
            .tools
            .iter()
            .map(|t| {
                Ok(Tool {
                    name: t.name.clone(),
                    access: tool_access(t),
                    deferred: t.deferred,
                    segment: make.tool(t)?,
                })
            })
            .collect::<Result<Vec<_>, ScenarioError>>()?;
        let system = make.blocks(&scenario.system.to_vec(), "system")?;
        let plan_system = match &scenario.plan_system {
            Some(b) => Some(make.blocks(&b.to_vec(), "plan-system")?),
            None => None,
        };
        let user = SegmentKind::Message(Role::User);
        let r = &scenario.reminders;
        let plan_enter_reminder = make.content(
            Level::Messages,
            user.clone(),
            "reminder:plan-enter",
            &r.plan_enter,
        )?;
        let plan_exit_reminder = make.content(
            Level::Messages,
            user.clone(),
            "reminder:plan-exit",
            &r.plan_exit,
        )?;
        let denied_result =
            make.content(Level::Messages, user.clone(), "result:denied", &r.denied)?;
        let enter_approved_result = make.content(
            Level::Messages,
            user.clone(),
            "result:enter-approved",
            &r.enter_approved,
        )?;
        let enter_declined_result = make.content(
            Level::Messages,
            user,
            "result:enter-declined",
            &r.enter_declined,
        )?;
        let context = scenario
            .context
            .iter()
            .map(|c| {
                let seg = make.content(
                    Level::Messages,
                    SegmentKind::Message(Role::User),
                    &format!("context:{}", c.name),
                    &c.content(),
                )?;
                Ok((c.name.clone(), seg))
            })
            .collect::<Result<Vec<_>, ScenarioError>>()?;
        let plan_files = PlanFiles::new(&scenario.plans_dir, scenario.seed);
        Ok(Session {
            context,
            plan_files,
            path: path.to_path_buf(),
            tools,
            system,
            plan_system,
            plan_enter_reminder,
            plan_exit_reminder,
            denied_result,
            enter_approved_result,
            enter_declined_result,
            step_lines: step_lines(text),
            turns: TurnSegments::new(&scenario.steps),
            tokenizer,
            scenario,
        })
    }

    /// Reads, validates and prepares a scenario file.
    pub fn load(path: &Path, tokenizer: Option<Arc<Tokenizer>>) -> Result<Self, ScenarioError> {
        let text = crate::budget::read_text(path, "scenario").map_err(|e| {
            ScenarioError::new(path, None, e).with_hint(
                "check the path; `plancache run` with no argument replays scenarios/*.toml",
            )
        })?;
        let scenario = super::load_str(&text, path)?;
        let tokenizer = tokenizer.unwrap_or_else(|| Arc::new(Tokenizer::new(scenario.tokenizer)));
        Session::new(scenario, path, &text, tokenizer)
    }

    /// Human place of a step (0-based index): `step 7 (line 42)`.
    pub fn step_place(&self, index: usize) -> String {
        step_place(&self.step_lines, index)
    }

    /// The tool of that name, if the scenario defines one.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// A message segment from a token source; `label` names it in explanations and, for
    /// count-only content, keeps equal-sized blocks at different places distinct.
    pub fn message(&self, role: Role, label: &str, source: TokenSource) -> Arc<Segment> {
        self.maker().segment(
            Level::Messages,
            SegmentKind::Message(role),
            label,
            source,
            None,
        )
    }

    /// A message segment from a [`Content`] (text, tokens or file).
    pub fn message_content(
        &self,
        role: Role,
        label: &str,
        content: &Content,
    ) -> Result<Arc<Segment>, ScenarioError> {
        let kind = if content.reminder && role == Role::User {
            SegmentKind::Reminder
        } else {
            SegmentKind::Message(role)
        };
        self.maker().content(Level::Messages, kind, label, content)
    }

    /// A tool (segment and access) from a definition, e.g. one added mid-session.
    pub fn build_tool(&self, t: &ToolDef) -> Result<Tool, ScenarioError> {
        Ok(Tool {
            name: t.name.clone(),
            access: tool_access(t),
            deferred: t.deferred,
            segment: self.maker().tool(t)?,
        })
    }

    /// The re-rendered definition of an offered tool (`replace_tool` at `step`, 0-based). A
    /// count-only definition is labelled by the step, so a re-render of equal size is still new
    /// content; `access` and `deferred` are kept from `previous` unless the step sets them.
    pub fn replaced_tool(
        &self,
        t: &ToolDef,
        previous: &Tool,
        step: usize,
    ) -> Result<Tool, ScenarioError> {
        Ok(Tool {
            name: t.name.clone(),
            access: t.access.unwrap_or(previous.access),
            deferred: t.deferred || previous.deferred,
            segment: self
                .maker()
                .tool_labelled(t, format!("tool:{}@step{}", t.name, step + 1))?,
        })
    }

    /// A replacement for system block `block` (0-based) at `step` (0-based); it keeps
    /// `breakpoint` unless `content` sets one.
    pub fn system_replacement(
        &self,
        block: usize,
        content: &Content,
        breakpoint: Option<crate::prompt::Ttl>,
        step: usize,
    ) -> Result<Arc<Segment>, ScenarioError> {
        let c = Content {
            cache_control: content.cache_control.or(breakpoint),
            ..content.clone()
        };
        self.maker().content(
            Level::System,
            SegmentKind::System,
            &format!("system#{}@step{}", block + 1, step + 1),
            &c,
        )
    }

    /// `current` with the `len` tokens from `at` (0-based) replaced by new ones (an
    /// `edit_system` patch at `step`, 0-based): the block keeps its length, the tokens before
    /// the span stay identical. `None` when the span does not fit in the block.
    pub fn system_patch(
        &self,
        current: &Segment,
        at: u32,
        len: u32,
        step: usize,
    ) -> Option<Arc<Segment>> {
        let (at, len) = (at as usize, len as usize);
        let end = at.checked_add(len)?;
        if end > current.len() {
            return None;
        }
        let span = TokenSource::Count(len as u32);
        let label = format!("{}@step{}:patch{at}+{len}", current.label, step + 1);
        let span_id = Tokenizer::content_id(&format!("{}|{label}", current.id), &span);
        let fresh = self.tokenizer.tokens(span_id, &span);
        let tokens: Vec<crate::prompt::TokenId> = current.tokens[..at]
            .iter()
            .chain(fresh.iter())
            .chain(current.tokens[end..].iter())
            .copied()
            .collect();
        Some(Arc::new(Segment {
            id: Tokenizer::content_id(
                &format!("{}|{span_id}", current.id),
                &TokenSource::Count(tokens.len() as u32),
            ),
            level: current.level,
            kind: current.kind.clone(),
            label,
            tokens: tokens.into(),
            breakpoint: current.breakpoint,
        }))
    }

    /// System segments from blocks (a subagent's system prompt); `prefix` labels them.
    pub fn system_blocks(
        &self,
        blocks: &[Content],
        prefix: &str,
    ) -> Result<Vec<Arc<Segment>>, ScenarioError> {
        self.maker().blocks(blocks, prefix)
    }

    /// A subagent's environment block (`environment` of an agent), a system block labelled
    /// `<prefix>:environment`: a count-only block is this spawn's own content.
    pub fn environment_block(
        &self,
        prefix: &str,
        content: &Content,
    ) -> Result<Arc<Segment>, ScenarioError> {
        self.maker().content(
            Level::System,
            SegmentKind::System,
            &format!("{prefix}{ENVIRONMENT_SUFFIX}"),
            content,
        )
    }

    /// A named context block's replacement (an `edit_context` at step `step`, 0-based).
    pub fn context_block(
        &self,
        block: &ContextBlock,
        step: usize,
    ) -> Result<Arc<Segment>, ScenarioError> {
        self.maker().content(
            Level::Messages,
            SegmentKind::Message(Role::User),
            &format!("context:{}@step{}", block.name, step + 1),
            &block.content(),
        )
    }

    /// The stub a deferred tool is listed as: its name and a one-line hint
    /// (`deferred_tools.stub_tokens`).
    pub fn tool_stub(&self, tool: &Tool) -> Arc<Segment> {
        self.maker().segment(
            Level::Tools,
            SegmentKind::Tool,
            &format!("tool-stub:{}", tool.name),
            TokenSource::Count(self.scenario.deferred_tools.stub_tokens),
            None,
        )
    }

    /// The tool reference block that loads a deferred tool's full definition into the
    /// conversation (as many tokens as the definition).
    pub fn tool_reference(&self, tool: &Tool) -> Arc<Segment> {
        self.message(
            Role::User,
            &format!("tool-reference:{}", tool.name),
            TokenSource::Count(tool.segment.len() as u32),
        )
    }

    /// The message announcing a tool that became available mid-session
    /// (`deferred_tools.announce_tokens`); `step` is 0-based.
    pub fn tool_announcement(&self, tool: &Tool, step: usize) -> Arc<Segment> {
        self.message(
            Role::User,
            &format!("step{}:tool-available:{}", step + 1, tool.name),
            TokenSource::Count(self.scenario.deferred_tools.announce_tokens),
        )
    }

    fn maker(&self) -> SegmentMaker<'_> {
        SegmentMaker {
            path: &self.path,
            tokenizer: &self.tokenizer,
        }
    }
}

/// Rejects a `file = ...` content larger than the session budget could hold (at four bytes per
/// token, about what English text and code average), before reading it.
fn check_file_size(scenario: &Path, label: &str, full: &Path) -> Result<(), ScenarioError> {
    let limit = crate::budget::Budget::current()
        .max_session_tokens
        .saturating_mul(4);
    match std::fs::metadata(full) {
        Ok(m) if !m.is_file() => Err(ScenarioError::new(
            scenario,
            Some(label.to_string()),
            format!("`{}` is not a regular file", full.display()),
        )),
        Ok(m) if m.len() > limit => Err(ScenarioError::new(
            scenario,
            Some(label.to_string()),
            format!(
                "`{}` is {} bytes, more than a session may hold ({limit} bytes: 4 per token of the session budget)",
                full.display(),
                m.len()
            ),
        )
        .with_hint(format!(
            "raise the budget with `{} N`",
            crate::budget::TOKENS_FLAG
        ))),
        _ => Ok(()),
    }
}

/// A tool's access: as declared, or by name.
pub fn tool_access(t: &ToolDef) -> Access {
    t.access
        .unwrap_or(if DEFAULT_WRITE_TOOLS.contains(&t.name.as_str()) {
            Access::Write
        } else {
            Access::Read
        })
}

/// The name a session's outputs are filed under (chart files, report sections, CSV rows): what
/// `name` becomes as a file name, compared case-insensitively (two names that differ only by
/// case or punctuation would overwrite each other's files on some file systems).
fn output_key(name: &str) -> String {
    crate::util::slug(name).to_lowercase()
}

impl Session {
    /// Makes the output keys of loaded sessions distinct: when several share a `name` (or names
    /// that map to one file name), each of them is renamed after its file stem. Returns one note
    /// per clash for the user; fails when even the file stems clash.
    pub fn assign_output_keys(sessions: &mut [Session]) -> Result<Vec<String>, ScenarioError> {
        let mut notes = Vec::new();
        let mut by_key: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
        for (i, s) in sessions.iter().enumerate() {
            by_key
                .entry(output_key(&s.scenario.name))
                .or_default()
                .push(i);
        }
        for group in by_key.values().filter(|g| g.len() > 1) {
            let files: Vec<String> = group
                .iter()
                .map(|&i| sessions[i].path.display().to_string())
                .collect();
            let names: Vec<String> = group
                .iter()
                .map(|&i| sessions[i].scenario.name.clone())
                .collect();
            let mut stems = Vec::new();
            for &i in group {
                let stem = sessions[i]
                    .path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                sessions[i].scenario.name = stem.clone();
                stems.push(stem);
            }
            notes.push(format!(
                "scenarios {} share the name {}: their outputs are keyed by file stem ({})",
                files.join(", "),
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(" / "),
                stems.join(", ")
            ));
        }
        let mut seen: std::collections::HashMap<String, usize> = Default::default();
        for (i, s) in sessions.iter().enumerate() {
            if let Some(&j) = seen.get(&output_key(&s.scenario.name)) {
                return Err(ScenarioError::new(
                    &s.path,
                    Some("name".into()),
                    format!(
                        "its outputs would overwrite those of {} (both filed as `{}`)",
                        sessions[j].path.display(),
                        s.scenario.name
                    ),
                )
                .with_hint(
                    "give each scenario a distinct `name` and file name, and name each file once",
                ));
            }
            seen.insert(output_key(&s.scenario.name), i);
        }
        Ok(notes)
    }
}
