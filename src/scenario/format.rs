//! The scenario file format (TOML). Unknown fields are errors.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

pub use crate::plan_mode::{Access, Target};
use crate::plan_mode::{AllowedPrompt, Mode};
use crate::prompt::{Encoding, Ttl};
pub use crate::util::{duration_str, opt_duration_str};

/// One session script.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short identifier, used in output rows.
    pub name: String,
    /// What the session shows, in a sentence (free text, not used by the replay).
    #[serde(default)]
    pub description: String,
    /// Model that serves the session; prices and cache rules come from the bundled table.
    pub model: String,
    /// Model used in plan mode by the `model-switch` strategy (default: same as `model`).
    #[serde(default)]
    pub plan_model: Option<String>,
    /// BPE encoding for segments given as text.
    #[serde(default)]
    pub tokenizer: Encoding,
    /// Seed for everything drawn deterministically (plan file slug).
    #[serde(default)]
    pub seed: u64,
    /// Permission mode at the start of the session.
    #[serde(default)]
    pub initial_mode: Mode,
    /// Whether `auto` mode is available when the plan is approved (else `auto` restores `default`).
    #[serde(default = "yes")]
    pub auto_available: bool,
    /// The user is not at a terminal (external channels): both plan tools are disabled.
    #[serde(default)]
    pub external_channels: bool,
    /// Directory of plan files.
    #[serde(default = "default_plans_dir")]
    pub plans_dir: String,
    /// The system prompt: one block or several, in order.
    pub system: Blocks,
    /// A plan-mode system prompt (used by strategies that swap the system prompt).
    #[serde(default)]
    pub plan_system: Option<Blocks>,
    /// The harness's full toolset, in prompt order.
    pub tools: Vec<ToolDef>,
    /// Messages the harness appends around plan mode.
    #[serde(default)]
    pub reminders: Reminders,
    /// Team settings, when this session is a teammate.
    #[serde(default)]
    pub team: Option<Team>,
    /// Default durations on the simulated clock.
    #[serde(default)]
    pub timing: Timing,
    /// Early context blocks (memory / instructions files such as CLAUDE.md) injected at the start
    /// of the messages, in order; `edit_context` steps replace one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<ContextBlock>,
    /// Sizes used by the `deferred-tools` strategy.
    #[serde(default)]
    pub deferred_tools: Deferral,
    /// The cache TTL class the harness asks for, for every stream (`ttl = "1h"`) or per stream
    /// (`ttl = { main = "1h", subagents = "5m" }`, as Claude Code's `promptCacheTtl` and
    /// `subagentPromptCacheTtl`). Unset: the cache model's layout decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<TtlSchema>")]
    pub ttl: Option<TtlSetting>,
    /// `max_tokens` of the keep-alive pings (`wait = { ..., keepalive = "4m30s" }`): 1 (the
    /// default) or 0, a pre-warm that generates nothing and is billed no output token.
    #[serde(
        default = "default_keepalive_max_tokens",
        skip_serializing_if = "is_default_keepalive_max_tokens"
    )]
    pub keepalive_max_tokens: u32,
    /// The session's steps, replayed in order.
    pub steps: Vec<Step>,
}

fn default_keepalive_max_tokens() -> u32 {
    1
}

fn is_default_keepalive_max_tokens(n: &u32) -> bool {
    *n == default_keepalive_max_tokens()
}

/// The TTL class per stream: one for every stream, or the main stream's and the subagents'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum TtlSetting {
    /// `ttl = "1h"`: every stream writes this class.
    All(Ttl),
    /// `ttl = { main = "1h", subagents = "5m" }`; an unset half leaves that stream to the layout.
    PerStream(StreamTtls),
}

/// The per-stream form of [`TtlSetting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamTtls {
    /// The main conversation's class (Claude Code `promptCacheTtl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main: Option<Ttl>,
    /// Every subagent stream's class (Claude Code `subagentPromptCacheTtl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagents: Option<Ttl>,
}

impl TtlSetting {
    /// The class the harness asks for in `stream` (`main` or a subagent's name), if it sets one.
    pub fn for_stream(&self, stream: &str) -> Option<Ttl> {
        match self {
            TtlSetting::All(t) => Some(*t),
            TtlSetting::PerStream(s) if stream == "main" => s.main,
            TtlSetting::PerStream(s) => s.subagents,
        }
    }
}

/// The TTL setting as written: a class, or a table per stream.
#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(untagged)]
enum TtlSchema {
    All(Ttl),
    PerStream(StreamTtls),
}

impl<'de> Deserialize<'de> for TtlSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hint = "write ttl = \"1h\" or ttl = { main = \"1h\", subagents = \"5m\" }";
        match toml::Value::deserialize(d)? {
            v @ toml::Value::String(_) => Ttl::deserialize(v)
                .map(TtlSetting::All)
                .map_err(|e| serde::de::Error::custom(format!("{e}; {hint}"))),
            table @ toml::Value::Table(_) => StreamTtls::deserialize(table)
                .map(TtlSetting::PerStream)
                .map_err(|e| serde::de::Error::custom(format!("{e}; {hint}"))),
            other => Err(serde::de::Error::custom(format!(
                "expected a TTL class or a table per stream, found {}; {hint}",
                other.type_str()
            ))),
        }
    }
}

/// A named early context block (text, tokens or file, like [`Content`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContextBlock {
    /// The block's name, e.g. `CLAUDE.md`; `edit_context` refers to it.
    pub name: String,
    /// Size in tokens, when the text itself is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// Literal text, tokenized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A file (relative to the scenario file) whose text is tokenized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// An explicit cache breakpoint on this block (`"5m"` or `"1h"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Ttl>,
}

impl ContextBlock {
    /// The block as [`Content`] (never a reminder).
    pub fn content(&self) -> Content {
        Content {
            tokens: self.tokens,
            text: self.text.clone(),
            file: self.file.clone(),
            cache_control: self.cache_control,
            reminder: false,
        }
    }
}

/// Sizes of the pieces the `deferred-tools` strategy adds: a stub per deferred tool in the tools
/// list, and a short message announcing a tool that became available mid-session.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Deferral {
    /// Tokens of one deferred tool's stub entry (its name and a one-line hint).
    #[serde(default = "default_stub_tokens")]
    pub stub_tokens: u32,
    /// Tokens of the message announcing a tool added mid-session.
    #[serde(default = "default_announce_tokens")]
    pub announce_tokens: u32,
}

fn default_stub_tokens() -> u32 {
    12
}
fn default_announce_tokens() -> u32 {
    30
}

impl Default for Deferral {
    fn default() -> Self {
        Deferral {
            stub_tokens: default_stub_tokens(),
            announce_tokens: default_announce_tokens(),
        }
    }
}

fn yes() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_plans_dir() -> String {
    "plans".to_string()
}

/// Content given as text, a token count, a file or a JSON schema.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Content {
    /// Size in tokens, when the text itself is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// Literal text, tokenized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A file (relative to the scenario file) whose text is tokenized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// An explicit cache breakpoint on this block (`"5m"` or `"1h"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Ttl>,
    /// A user message that is a harness reminder (Claude Code's `<system-reminder>`
    /// attachments), which the harness appends after the request's message breakpoint: the
    /// request that first carries it does not write it, and the next request reads up to the
    /// block before it. User messages only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reminder: bool,
}

impl Content {
    /// Content of `n` tokens and no text.
    pub fn tokens(n: u32) -> Self {
        Content {
            tokens: Some(n),
            ..Content::default()
        }
    }
}

/// Text given inline as a string, or a [`Content`] table.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum TextOrContent {
    /// A string: the text itself.
    Text(String),
    /// A table: tokens, text or file.
    Content(Content),
}

impl TextOrContent {
    /// The text as [`Content`] (a string becomes its `text`).
    pub fn into_content(self) -> Content {
        match self {
            TextOrContent::Text(text) => Content {
                text: Some(text),
                ..Content::default()
            },
            TextOrContent::Content(c) => c,
        }
    }
}

impl<'de> Deserialize<'de> for TextOrContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => Ok(TextOrContent::Text(s)),
            table @ toml::Value::Table(_) => Content::deserialize(table)
                .map(TextOrContent::Content)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "expected a string or a table like {{ tokens = 120 }}, found {}",
                other.type_str()
            ))),
        }
    }
}

/// One block or a list of blocks.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum Blocks {
    /// A single block.
    One(Content),
    /// Several blocks, in prompt order.
    Many(Vec<Content>),
}

impl Blocks {
    /// The blocks as a list, in prompt order.
    pub fn to_vec(&self) -> Vec<Content> {
        match self {
            Blocks::One(c) => vec![c.clone()],
            Blocks::Many(v) => v.clone(),
        }
    }
}

/// One tool definition, in prompt order.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    /// The tool's name as the model sees it; steps' calls refer to it.
    pub name: String,
    /// Defaults by name: Edit, Write, Bash, NotebookEdit are `write`, others `read`.
    #[serde(default)]
    pub access: Option<Access>,
    /// Size in tokens of the whole definition.
    #[serde(default)]
    pub tokens: Option<u32>,
    /// Description text (tokenized together with the schema and name).
    #[serde(default)]
    pub description: Option<String>,
    /// JSON schema of the input, tokenized as compact JSON with sorted keys.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
    pub schema: Option<toml::Value>,
    /// Listed as a stub and loaded on demand (strategies that defer tools).
    #[serde(default, skip_serializing_if = "is_false")]
    pub deferred: bool,
    /// An explicit cache breakpoint after this definition (`"5m"` or `"1h"`).
    #[serde(default)]
    pub cache_control: Option<Ttl>,
}

/// Messages the harness appends around plan mode (sizes calibrated to Claude Code).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reminders {
    /// Announces plan mode (appended to the conversation on entry).
    #[serde(default = "default_enter_reminder")]
    pub plan_enter: Content,
    /// Announces leaving plan mode.
    #[serde(default = "default_exit_reminder")]
    pub plan_exit: Content,
    /// Error result of a tool call denied by the permission layer.
    #[serde(default = "default_denied")]
    pub denied: Content,
    /// Result of an approved EnterPlanMode.
    #[serde(default = "default_enter_approved")]
    pub enter_approved: Content,
    /// Result of a declined EnterPlanMode.
    #[serde(default = "default_enter_declined")]
    pub enter_declined: Content,
    /// Tokens around the plan in an approved ExitPlanMode result (the plan text follows).
    #[serde(default = "default_plan_approved_header")]
    pub plan_approved_header: u32,
    /// Tokens around the user's feedback in a rejected ExitPlanMode result.
    #[serde(default = "default_plan_rejected_header")]
    pub plan_rejected_header: u32,
}

fn default_enter_reminder() -> Content {
    Content::tokens(147)
}
fn default_exit_reminder() -> Content {
    Content::tokens(41)
}
fn default_denied() -> Content {
    Content::tokens(40)
}
fn default_enter_approved() -> Content {
    Content::tokens(60)
}
fn default_enter_declined() -> Content {
    Content::tokens(20)
}
fn default_plan_approved_header() -> u32 {
    30
}
fn default_plan_rejected_header() -> u32 {
    25
}

impl Default for Reminders {
    fn default() -> Self {
        Reminders {
            plan_enter: default_enter_reminder(),
            plan_exit: default_exit_reminder(),
            denied: default_denied(),
            enter_approved: default_enter_approved(),
            enter_declined: default_enter_declined(),
            plan_approved_header: default_plan_approved_header(),
            plan_rejected_header: default_plan_rejected_header(),
        }
    }
}

impl Reminders {
    /// No reminders of plancache's own: for a scenario built from a log whose recorded sizes
    /// already hold everything the harness appended around plan mode.
    pub fn recorded() -> Reminders {
        Reminders {
            plan_enter: Content::tokens(0),
            plan_exit: Content::tokens(0),
            denied: Content::tokens(0),
            enter_approved: Content::tokens(0),
            enter_declined: Content::tokens(0),
            plan_approved_header: 0,
            plan_rejected_header: 0,
        }
    }
}

/// A teammate session: plan approval goes through the team lead's mailbox.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Team {
    /// This session's name in the team.
    pub name: String,
    /// The team lead who approves plans.
    #[serde(default = "default_lead")]
    pub lead: String,
    /// Plan mode is required for this teammate: ExitPlanMode asks the lead.
    #[serde(default)]
    pub plan_mode_required: bool,
}

fn default_lead() -> String {
    "team-lead".to_string()
}

/// Durations used when a step does not give its own (`"500ms"`, `"30s"`, `"3m"`, `"1h"`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Time a tool call takes to return its result.
    #[serde(default = "default_tool", with = "duration_str")]
    #[schemars(with = "String")]
    pub tool: Duration,
    /// Time the human takes to answer an approval or a permission prompt.
    #[serde(default = "default_human", with = "duration_str")]
    #[schemars(with = "String")]
    pub human: Duration,
    /// Time the human takes to write a message.
    #[serde(default = "default_typing", with = "duration_str")]
    #[schemars(with = "String")]
    pub typing: Duration,
    /// Output generation speed.
    #[serde(default = "default_decode")]
    pub decode_tokens_per_s: f64,
}

fn default_tool() -> Duration {
    Duration::from_millis(800)
}
fn default_human() -> Duration {
    Duration::from_secs(10)
}
fn default_typing() -> Duration {
    Duration::from_secs(20)
}
fn default_decode() -> f64 {
    60.0
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            tool: default_tool(),
            human: default_human(),
            typing: default_typing(),
            decode_tokens_per_s: default_decode(),
        }
    }
}

impl Timing {
    /// The timing of a scenario whose time comes from a log's timestamps (wait steps): no
    /// default delay of its own, and output that takes no time to decode.
    pub fn recorded() -> Timing {
        Timing {
            tool: Duration::ZERO,
            human: Duration::ZERO,
            typing: Duration::ZERO,
            decode_tokens_per_s: 1e9,
        }
    }
}

/// One step of the script. Each step is a table with exactly one of these keys.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// A user message: a string, or `{ text = ... }` / `{ tokens = N }`.
    User(TextOrContent),
    /// One assistant reply, i.e. one API request.
    Assistant(Turn),
    /// The user approves a pending EnterPlanMode or ExitPlanMode: `"enter"`, `"exit"`, or
    /// `{ exit = true, clear_context = true }` (approve and implement in a cleared context).
    Approve(#[schemars(with = "ApprovalSchema")] Approval),
    /// The user declines a pending EnterPlanMode.
    Decline(Target),
    /// The user rejects a pending ExitPlanMode with feedback.
    Reject(TextOrContent),
    /// The user edits the pending plan, then approves it.
    Edit(PlanText),
    /// The team lead answers a teammate's plan approval request.
    Lead(LeadResponse),
    /// The user switches the permission mode (e.g. shift+tab into `plan`).
    Mode(Mode),
    /// Human think time on the simulated clock: `"3m"`, or `{ duration = "7m", keepalive =
    /// "4m30s" }` when the harness pings the cache during the wait.
    Wait(#[schemars(with = "WaitSchema")] WaitDuration),
    /// Subagents launched in parallel by the preceding assistant reply (one Agent call each).
    Agents(Vec<AgentSpec>),
    /// Context compaction: one summarisation request (the whole conversation plus a summary
    /// instruction), then the conversation restarts from its output (tools and system unchanged).
    Compact(Compact),
    /// Replaces a named early context block (e.g. CLAUDE.md edited mid-session).
    EditContext(ContextBlock),
    /// A tool becomes available mid-session (appended to the tools list).
    AddTool(ToolDef),
    /// A tool is withdrawn mid-session, wherever it sits in the list.
    RemoveTool(String),
    /// A system block is replaced or patched mid-session (a date line that changes, say).
    EditSystem(SystemEdit),
    /// The listed tools swap places: they take the positions the listed tools occupy, in the
    /// listed order; unlisted tools stay where they are.
    ReorderTools(Vec<String>),
    /// An offered tool's definition is re-rendered in place (a new schema or description).
    ReplaceTool(ToolDef),
}

/// An approval: which plan tool it answers and, for ExitPlanMode, whether the user chose to
/// clear the context (Claude Code's "clear context and implement": the next request is tools,
/// system, the early context blocks and the approved plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Approval {
    /// The pending plan tool the approval answers.
    pub target: Target,
    /// The conversation restarts from the approved plan (ExitPlanMode only).
    pub clear_context: bool,
}

impl From<Target> for Approval {
    fn from(target: Target) -> Self {
        Approval {
            target,
            clear_context: false,
        }
    }
}

/// The table form of an approval.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
struct ApprovalTable {
    /// Approves a pending EnterPlanMode.
    #[serde(default, skip_serializing_if = "is_false")]
    enter: bool,
    /// Approves a pending ExitPlanMode.
    #[serde(default, skip_serializing_if = "is_false")]
    exit: bool,
    /// With `exit`: clear the context and implement from the plan.
    #[serde(default, skip_serializing_if = "is_false")]
    clear_context: bool,
}

/// An approval as written: `"enter"`, `"exit"`, or `{ exit = true, clear_context = true }`.
#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(untagged)]
enum ApprovalSchema {
    Target(Target),
    Table(ApprovalTable),
}

impl Serialize for Approval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.clear_context {
            return self.target.serialize(s);
        }
        ApprovalTable {
            enter: self.target == Target::Enter,
            exit: self.target == Target::Exit,
            clear_context: true,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Approval {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hint = "write approve = \"exit\", approve = \"enter\" or approve = { exit = true, clear_context = true }";
        match toml::Value::deserialize(d)? {
            v @ toml::Value::String(_) => Target::deserialize(v)
                .map(Approval::from)
                .map_err(|e| serde::de::Error::custom(format!("{e}; {hint}"))),
            table @ toml::Value::Table(_) => {
                let t = ApprovalTable::deserialize(table)
                    .map_err(|e| serde::de::Error::custom(format!("{e}; {hint}")))?;
                let target = match (t.enter, t.exit) {
                    (false, true) => Target::Exit,
                    (true, false) => Target::Enter,
                    _ => {
                        return Err(serde::de::Error::custom(format!(
                            "an approval answers exactly one of `enter` or `exit`; {hint}"
                        )))
                    }
                };
                if t.clear_context && target == Target::Enter {
                    return Err(serde::de::Error::custom(
                        "`clear_context` applies to approving ExitPlanMode (the plan), not EnterPlanMode; write approve = { exit = true, clear_context = true }",
                    ));
                }
                Ok(Approval {
                    target,
                    clear_context: t.clear_context,
                })
            }
            other => Err(serde::de::Error::custom(format!(
                "expected \"enter\", \"exit\" or a table, found {}; {hint}",
                other.type_str()
            ))),
        }
    }
}

/// A mid-session change to one block of the system prompt: a replacement (`tokens`, `text` or
/// `file`) or a patch of a token span that keeps the block's length (`patch_at`,
/// `patch_tokens`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SystemEdit {
    /// Which block of `system` (1-based).
    pub block: usize,
    /// Replacement size in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// Replacement text (tokenized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Replacement file, relative to the scenario file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Patch: first token (0-based, within the block) of the span that changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_at: Option<u32>,
    /// Patch: length of the span that changes; the block keeps its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_tokens: Option<u32>,
    /// Breakpoint of the replaced block (default: the original block's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Ttl>,
}

impl SystemEdit {
    /// The replacement as [`Content`], when the edit is a replacement.
    pub fn replacement(&self) -> Option<Content> {
        (self.tokens.is_some() || self.text.is_some() || self.file.is_some()).then(|| Content {
            tokens: self.tokens,
            text: self.text.clone(),
            file: self.file.clone(),
            cache_control: self.cache_control,
            reminder: false,
        })
    }
}

/// One subagent: its own request stream with its own system prompt, tools and conversation.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The stream's name (unique within the session), e.g. `explore-1`.
    pub name: String,
    /// The main stream's tool that launches it.
    #[serde(default = "default_agent_tool")]
    pub tool: String,
    /// Agent type (e.g. `Explore`). Agents of one type share their system prompt, so a
    /// count-only system prompt is identified by the type and their cache prefixes match; without
    /// a type each agent's count-only system prompt is its own content.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The subagent's own system prompt.
    pub system: Blocks,
    /// Names of the tools it is given (from the session's tools), in prompt order.
    pub tools: Vec<String>,
    /// The task the main stream hands over: the subagent's first user message.
    pub prompt: TextOrContent,
    /// Model of the subagent's requests (default: the strategy's model for the current mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Size of the result returned to the main stream (default: its last reply's size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_tokens: Option<u32>,
    /// The environment block Claude Code appends to a subagent's system prompt (working
    /// directory, platform, date, git status), after the agent's own prompt. It is this spawn's
    /// own content: no other spawn's prompt has the same bytes. See the `anthropic` cache's
    /// `subagent_environment_breakpoint` for where the layout's breakpoint goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Content>,
    /// Its steps: `user`, `assistant` and `wait` only.
    pub steps: Vec<Step>,
}

fn default_agent_tool() -> String {
    "Agent".to_string()
}

/// A compaction: the summary (text or size) and the summarisation request that produces it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Compact {
    /// Size of the summary: the request's output and the new conversation's first message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_tokens: Option<u32>,
    /// The summary's text, tokenized (instead of `summary_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Messages kept in place, in tokens from the start of the conversation (whole messages, up
    /// to this many): tool results cleared in place or a rewind keep the prefix before the first
    /// changed message, and the summary stands for what follows it. Unset: a full compaction,
    /// the conversation restarts from the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_tokens: Option<u32>,
    /// Size of the summary instruction appended to the conversation. The default, 1,902, is
    /// Claude Code 2.1.240's: the conversation-summarization prompt (1,795 tokens) after the
    /// summarization no-tools guard (107 tokens), github.com/Piebald-AI/claude-code-system-prompts
    /// at commit 391175e (read 2026-12-01).
    #[serde(
        default = "default_instruction_tokens",
        skip_serializing_if = "is_default_instruction"
    )]
    pub instruction_tokens: u32,
    /// Whether the summarisation request is sent (and priced). `false`: the summary appears
    /// without a request of its own, as in an imported transcript that does not log it.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub request: bool,
    /// Whether the summarisation request carries the tool definitions. `true` (default): Claude
    /// Code's cache-safe fork, the same tools, system and messages as the conversation, then
    /// the instruction, so the cached prefix is read (Anthropic, "Lessons from building Claude
    /// Code: prompt caching is everything", 2026-02-19). `false`: the tools are left out, as in
    /// Codex CLI's local compaction (openai/codex#37305), so the cached prefix cannot match.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub tools: bool,
}

fn default_instruction_tokens() -> u32 {
    1902
}

fn is_default_instruction(n: &u32) -> bool {
    *n == default_instruction_tokens()
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Default for Compact {
    fn default() -> Self {
        Compact {
            summary_tokens: None,
            summary: None,
            keep_tokens: None,
            instruction_tokens: default_instruction_tokens(),
            request: true,
            tools: true,
        }
    }
}

/// A wait: its duration (`"90s"`, `"7m"`, `"1h30m"`) and, optionally, the interval of the
/// harness's keep-alive pings during it (`{ duration = "7m", keepalive = "4m30s" }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitDuration(pub Duration, pub Option<Duration>);

impl WaitDuration {
    /// A wait without keep-alive pings.
    pub fn new(d: Duration) -> Self {
        WaitDuration(d, None)
    }

    /// The keep-alive interval, if the harness pings during this wait.
    pub fn keepalive(&self) -> Option<Duration> {
        self.1
    }
}

/// The table form of a wait.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitTable {
    /// How long the human is away.
    #[serde(with = "duration_str")]
    #[schemars(with = "String")]
    duration: Duration,
    /// Interval of the keep-alive pings (each re-sends the stream's last request with
    /// `max_tokens` = the scenario's `keepalive_max_tokens`, 1 by default); absent or `"off"`:
    /// no pings.
    #[serde(
        default,
        with = "opt_keepalive_str",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    keepalive: Option<Duration>,
}

/// A wait as written: a duration (`"7m"`), or `{ duration = "7m", keepalive = "4m30s" }`.
#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(untagged)]
enum WaitSchema {
    Duration(String),
    Table(WaitTable),
}

impl Serialize for WaitDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            None => duration_str::serialize(&self.0, s),
            Some(k) => WaitTable {
                duration: self.0,
                keepalive: Some(k),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for WaitDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => duration_str::deserialize(toml::Value::String(s))
                .map(WaitDuration::new)
                .map_err(serde::de::Error::custom),
            table @ toml::Value::Table(_) => WaitTable::deserialize(table)
                .map(|t| WaitDuration(t.duration, t.keepalive))
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "expected a duration like \"7m\" or a table like {{ duration = \"7m\", keepalive = \"4m30s\" }}, found {}",
                other.type_str()
            ))),
        }
    }
}

/// Parses a keep-alive setting: a duration, or `"off"` for none.
pub fn parse_keepalive(text: &str) -> Result<Option<Duration>, KeepaliveError> {
    if text.trim() == "off" {
        return Ok(None);
    }
    let d = humantime::parse_duration(text).map_err(|source| KeepaliveError::Invalid {
        text: text.to_string(),
        source,
    })?;
    if d.is_zero() {
        return Err(KeepaliveError::Zero {
            text: text.to_string(),
        });
    }
    Ok(Some(d))
}

/// A keep-alive setting that is neither an interval nor `off`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeepaliveError {
    /// Not a duration.
    #[error("invalid keepalive `{text}` ({source}); write e.g. \"4m30s\", or \"off\"")]
    Invalid {
        /// As given.
        text: String,
        /// Why it is no duration.
        source: humantime::DurationError,
    },
    /// A zero interval.
    #[error("keepalive `{text}` is zero; write an interval such as \"4m30s\", or \"off\"")]
    Zero {
        /// As given.
        text: String,
    },
}

/// `keepalive = "4m30s"` or `"off"`.
mod opt_keepalive_str {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration_str::serialize(d, s),
            None => s.serialize_str("off"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_keepalive(&text).map_err(serde::de::Error::custom)
    }
}

impl Scenario {
    /// The `cache_control` TTLs the scenario puts on its tools, system blocks and context blocks,
    /// in that order (what a breakpoint layout honouring explicit marks writes besides its own).
    pub fn cache_marks(&self) -> Vec<Ttl> {
        let tools = self.tools.iter().filter_map(|t| t.cache_control);
        let system = self
            .system
            .to_vec()
            .into_iter()
            .filter_map(|c| c.cache_control);
        let context = self.context.iter().filter_map(|c| c.cache_control);
        tools.chain(system).chain(context).collect()
    }

    /// Sets (or, with `None`, clears) the scenario's TTL setting, as a `ttl` sweep axis over
    /// user scenarios would.
    pub fn set_ttl(&mut self, ttl: Option<TtlSetting>) {
        self.ttl = ttl;
    }

    /// Sets the keep-alive interval of every main-stream wait (`None`: no pings), as the
    /// `keepalive` sweep axis does.
    pub fn set_keepalive(&mut self, every: Option<Duration>) {
        for step in &mut self.steps {
            if let Step::Wait(w) = step {
                w.1 = every;
            }
        }
    }
}

/// One assistant reply.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Visible output tokens (text and tool-call blocks), repeated in later prompts.
    #[serde(default)]
    pub tokens: Option<u32>,
    /// Visible output as text (tokenized), instead of `tokens`.
    #[serde(default)]
    pub text: Option<String>,
    /// Reasoning tokens: billed as output, never repeated in later prompts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u32,
    /// Model that served this request, overriding the strategy's (recorded as a note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tool calls made in this reply, executed in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<Call>,
    /// A request the harness sent but did not log (a retry after an API error, a summary made
    /// while the user was away, an interrupted request, a fork of its own at a turn's end): it
    /// reads and refreshes the cache like any request, but yields no request row, so replays of
    /// recorded sessions stay aligned with the recorded requests. Its `tokens` are then a
    /// closing message of its own (an instruction) sent after the conversation and kept in
    /// none; with `tokens = 0` it is the conversation alone, and the entry it writes ends at the
    /// conversation's last message, where the next request reads it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unlogged: bool,
}

/// One tool call.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The name of the tool called (one of the scenario's `tools`).
    pub tool: String,
    /// Size of the tool result in tokens.
    #[serde(default)]
    pub result_tokens: Option<u32>,
    /// The tool result as text (tokenized), instead of `result_tokens`.
    #[serde(default)]
    pub result: Option<String>,
    /// Shell command (for Bash): matched against granted allowed prompts.
    #[serde(default)]
    pub command: Option<String>,
    /// The call writes the session's plan file (allowed in plan mode).
    #[serde(default, skip_serializing_if = "is_false")]
    pub plan_file: bool,
    /// File the call writes; a write to this session's plan file (`<plans_dir>/<slug>.md`, or
    /// `<slug>-agent-<name>.md` in a subagent) counts as `plan_file = true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Plan size in tokens (Write of the plan file, or ExitPlanMode).
    #[serde(default)]
    pub plan_tokens: Option<u32>,
    /// Plan text (Write of the plan file, or ExitPlanMode).
    #[serde(default)]
    pub plan: Option<String>,
    /// Semantic permissions requested with the plan (ExitPlanMode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_prompts: Vec<AllowedPrompt>,
    /// Time this call takes (default: `timing.tool`).
    #[serde(
        default,
        with = "opt_duration_str",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub duration: Option<Duration>,
}

/// An edited plan: text or size.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanText {
    /// Size of the edited plan in tokens, when its text is not given.
    #[serde(default)]
    pub plan_tokens: Option<u32>,
    /// The edited plan's text, tokenized.
    #[serde(default)]
    pub plan: Option<String>,
}

/// The team lead's answer to a plan approval request.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeadResponse {
    /// Whether the lead approves the plan.
    pub approve: bool,
    /// The lead's message to the teammate (with a rejection, why).
    #[serde(default)]
    pub feedback: Option<String>,
}
