//! From a [`Transcript`] to scenarios: one per request stream, sized to match what was billed.
//!
//! Size derivation. A provider bills the whole prompt of request k as
//! `P_k = input + cache_creation + cache_read`. Between requests k-1 and k the conversation grows
//! by exactly `D_k = P_k - P_{k-1}`: the visible reply of k-1, the tool results and user text that
//! followed. The transcript holds their text but not the provider's token counts (its tokenizer
//! is not public), so each piece's o200k token count is used only as a *weight*: `D_k` is split
//! over the pieces in proportion to their weights (largest remainder, so the parts sum to `D_k`
//! exactly). When a gap holds no text at all (an image, a hidden reminder), `D_k` goes to the
//! reply. The first prompt is `P_1 = static prefix (tools + system) + first messages`: the first
//! messages get their own token counts and the static prefix the rest. The replayed prompt sizes
//! then equal the recorded ones request by request, unless the conversation shrank (compaction),
//! which is reported.

mod assemble;
mod boundary;
mod calls;
mod emit;
mod event;
mod stream;

pub use event::{ImportEvent, PrefixReplay};

use super::ImportError;
use super::{harness_ttl, ApiRequest, Block, Harness, Item, Stream, StreamKind, Transcript, Usage};
use crate::plan_mode::Mode;
use crate::prompt::{Encoding, Tokenizer, Ttl};
use crate::scenario::{
    Compact, Content, Scenario, Step, TextOrContent, WaitDuration, DEFAULT_WRITE_TOOLS,
};
use stream::build_stream;

/// A stream's requests, each with the items logged after it up to the next request.
type Rounds<'s> = [(&'s ApiRequest, Vec<&'s Item>)];

/// Where the events a scenario replays (breaks of the prompt prefix) come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Events {
    /// Only from the transcript's content and timestamps: the billed cache reads and writes are
    /// never read for anything but the report, so a replay predicts what it is scored on.
    #[default]
    Transcript,
    /// As `transcript`, plus breaks placed where the billed cache read dropped within the TTL
    /// with no visible cause; each such event is marked `# inferred from billed cache_read`.
    Billed,
}

impl Events {
    /// The name `--events` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Events::Transcript => "transcript",
            Events::Billed => "billed",
        }
    }
}

/// How a transcript is turned into scenarios.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Where events come from (see [`Events`]).
    pub events: Events,
    /// Encoding whose token counts weight the split of recorded prompt growth.
    pub encoding: Encoding,
    /// A recorded break: a request reading less than this share of the previous prompt.
    pub break_threshold: f64,
    /// A break whose read reaches this share of the static prefix is an early-block edit;
    /// below it, the tools or system changed.
    pub static_match: f64,
    /// Where each stream's TTL class comes from (`--ttl auto|version|5m|1h`).
    pub ttl: TtlChoice,
}

/// Where the TTL class a stream's harness asked for comes from. The class is a request-side
/// setting (Claude Code's `promptCacheTtl` / `subagentPromptCacheTtl`, or its version's
/// default): the harness knows it, the transcript does not log it, and the bill's 5 m / 1 h
/// split of the written tokens reveals it. Taken per stream, it never places, sizes or times an
/// event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TtlChoice {
    /// Per stream, the class most of its written tokens were billed at; a stream that wrote
    /// nothing (or whose split is not recorded): a fork takes the main thread's class, any other
    /// stream the version rule.
    #[default]
    Auto,
    /// From the harness version and the stream's kind only ([`harness_ttl`]).
    Version,
    /// One class for every stream (`--ttl 5m|1h`: the user knows it).
    Fixed(Ttl),
}

impl TtlChoice {
    /// `--ttl`: `auto`, `version`, `5m` or `1h`.
    pub fn parse(s: &str) -> Result<TtlChoice, ImportError> {
        match s {
            "auto" => Ok(TtlChoice::Auto),
            "version" => Ok(TtlChoice::Version),
            other => super::parse_ttl(other)
                .map(TtlChoice::Fixed)
                .map_err(|_| ImportError::TtlChoice(other.to_string())),
        }
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            events: Events::Transcript,
            encoding: Encoding::O200kBase,
            break_threshold: 0.5,
            static_match: 0.9,
            ttl: TtlChoice::Auto,
        }
    }
}

/// One request as recorded, next to the scenario step that replays it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The provider's request id.
    pub request_id: String,
    /// 1-based transcript line of its first record.
    pub line: usize,
    /// The model id as recorded.
    pub model: String,
    /// The cache counters the provider billed.
    pub usage: Usage,
    /// When it was sent, in ms after the transcript's first record.
    pub sent_at_ms: u64,
    /// Events recognised between the previous request and this one (a compaction, an early
    /// context-block edit, a tool-list change), as emitted into the scenario; validate lists them
    /// next to the request.
    pub events: Vec<ImportEvent>,
    /// The permission mode the transcript was in when it was sent.
    pub mode: Mode,
    /// When its response finished (its last record), in ms after the transcript's first record.
    pub finished_at_ms: u64,
}

/// When a request was sent, when its response began to be written (its first record) and when it
/// finished (its last record), in ms after the transcript's first record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendTime {
    /// When the request was sent.
    pub sent_ms: u64,
    /// When its response's first record was written.
    pub visible_ms: u64,
    /// When its response's last record was written.
    pub finished_ms: u64,
}

/// The scenario of one stream, with what was recorded for each of its requests.
#[derive(Debug, Clone)]
pub struct ImportedScenario {
    /// The stream's name (`main`, `agent-1`, ...).
    pub stream: String,
    /// The user's conversation or a subagent's.
    pub kind: StreamKind,
    /// The scenario that replays the stream.
    pub scenario: Scenario,
    /// Requests in order; the i-th assistant step of `scenario` replays `requests[i]`.
    pub requests: Vec<RecordedRequest>,
    /// The TTL the harness asked for in this stream: `--ttl`, else from the harness version and
    /// the stream's kind (`transcript` mode), or the class most requests wrote with
    /// (`cache_creation.ephemeral_*`, `billed` mode only).
    pub ttl: Option<Ttl>,
    /// Where `ttl` came from, for the scenario header and the report.
    pub ttl_source: String,
    /// Size of the leading block the first request read from an earlier session (tokens).
    pub shared_prefix: u64,
    /// Findings worth telling the user (model switches, shrinking prompts, mode repairs).
    pub notes: Vec<String>,
    /// Every request the scenario sends (logged and unlogged), in send order, with its recorded
    /// times: validate feeds the cache model these instead of the replay's own clock.
    pub timeline: Vec<SendTime>,
    /// Steps (0-based) placed from a billed cache read (`billed` mode only); each is marked
    /// `# inferred from billed cache_read` in the scenario file.
    pub inferred_steps: Vec<usize>,
}

impl ImportedScenario {
    /// The scenario as a TOML file, with a header saying where it came from.
    pub fn to_toml(&self, source: &str) -> Result<String, ImportError> {
        let body = toml::to_string(&self.scenario)?;
        let mut head = format!(
            "# Imported by `plancache import` from {} (stream {}).\n# Sizes are derived from the recorded usage (docs/validation.md explains how).\n",
            comment_safe(source),
            comment_safe(&self.stream)
        );
        if self
            .scenario
            .tools
            .iter()
            .any(|t| t.tokens.unwrap_or(0) > 0)
        {
            head.push_str("# Tool sizes are estimates from Claude Code 2.1.240's published tool descriptions (data/claude-code-prompt-pieces.md); the system block holds the rest of the static prefix.
");
        }
        if let Some(t) = self.ttl {
            head.push_str(&format!(
                "# Cache TTL of the harness: {} ({})\n",
                t.as_str(),
                comment_safe(&self.ttl_source)
            ));
        }
        if !self.inferred_steps.is_empty() {
            head.push_str(&format!(
                "# {} event(s) {INFERRED} (marked at their steps)\n",
                self.inferred_steps.len()
            ));
        }
        for n in &self.notes {
            head.push_str(&format!("# note: {}\n", comment_safe(n)));
        }
        // Mark each inferred step right above its `[[steps]]` table.
        let mut out = head;
        let mut step = 0usize;
        for line in body.split_inclusive('\n') {
            if line.trim_end() == "[[steps]]" {
                if self.inferred_steps.contains(&step) {
                    out.push_str(&format!("# {INFERRED}\n"));
                }
                step += 1;
            }
            out.push_str(line);
        }
        Ok(out)
    }
}

/// Text made safe for a one-line TOML comment: control characters (a newline in a recorded
/// model or request id would end the comment and inject TOML) are written escaped.
pub fn comment_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Rejects a transcript whose recorded usage no scenario could hold: any count (or a request's
/// whole prompt) above the scenario size limit, or a sum that overflows, is bad input naming
/// the request and its line.
pub fn check_sizes(t: &Transcript) -> Result<(), ImportError> {
    let limit = crate::scenario::MAX_TOKENS as u64;
    for s in &t.streams {
        for r in s.requests() {
            let u = &r.usage;
            let prompt = u
                .input_tokens
                .checked_add(u.cache_creation_input_tokens)
                .and_then(|x| x.checked_add(u.cache_read_input_tokens));
            let biggest = [
                u.input_tokens,
                u.cache_creation_input_tokens,
                u.cache_read_input_tokens,
                u.creation_5m.unwrap_or(0),
                u.creation_1h.unwrap_or(0),
                u.output_tokens,
            ]
            .into_iter()
            .max()
            .unwrap_or(0);
            match prompt {
                Some(p) if p <= limit && biggest <= limit => {}
                _ => {
                    let tokens =
                        prompt.map_or("more than 2^64".to_string(), |p| p.max(biggest).to_string());
                    return Err(crate::util::ScenarioError::new(
                        std::path::Path::new(&t.source),
                        Some(format!(
                            "line {} (request {}, stream {})",
                            r.line,
                            comment_safe(&r.request_id),
                            s.name
                        )),
                        format!("recorded usage of {tokens} tokens is larger than any prompt (limit {limit})"),
                    )
                    .with_hint("the usage counts of this record are corrupt; fix or remove the line")
                    .into());
                }
            }
        }
    }
    Ok(())
}

/// A date-suffixed model id without its date (`claude-sonnet-4-20250514` -> `claude-sonnet-4`):
/// the pricing table names model families.
pub fn model_family(id: &str) -> String {
    match id.rsplit_once('-') {
        Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => {
            head.to_string()
        }
        _ => id.to_string(),
    }
}

/// The model family most of a stream's requests ran on (ties: the earliest): the scenario's
/// model, which sizes its static prefix; requests on other models carry a `model` override.
fn majority_family<'a>(models: impl Iterator<Item = &'a str>) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for m in models {
        let f = model_family(m);
        match counts.iter_mut().find(|(g, _)| *g == f) {
            Some((_, n)) => *n += 1,
            None => counts.push((f, 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
    counts
        .into_iter()
        .find(|(_, n)| *n == best)
        .map(|(f, _)| f)
        .unwrap_or_default()
}

/// Builds one scenario per stream of `t` that has at least one request.
pub fn build_scenarios(t: &Transcript, opts: &ImportOptions) -> Vec<ImportedScenario> {
    build_scenarios_with(t, opts, &Tokenizer::new(opts.encoding))
}

/// [`build_scenarios`] counting tokens with `tok` (of `opts.encoding`), so that callers
/// importing many transcripts (an account) tokenize each distinct text once per run: the
/// memo is only a cache, the scenarios are the same.
pub fn build_scenarios_with(
    t: &Transcript,
    opts: &ImportOptions,
    tok: &Tokenizer,
) -> Vec<ImportedScenario> {
    debug_assert_eq!(tok.encoding(), opts.encoding);
    let origin = t
        .streams
        .iter()
        .flat_map(|s| s.items.iter().map(Item::at_ms))
        .min()
        .unwrap_or(0);
    let mut agent_static = agent_static(t, opts, tok);
    let main_tools = tools_of(t, StreamKind::Main);
    let agent_tools = tools_of(t, StreamKind::Agent);
    let mut out = Vec::new();
    let mut main_ttl: Option<Ttl> = None;
    let compaction_logged = t
        .streams
        .iter()
        .any(|s| s.kind == StreamKind::Agent && s.name.starts_with("agent-acompact-"));
    for s in &t.streams {
        if s.requests().next().is_none() {
            continue;
        }
        let (fixed, tools) = match s.kind {
            StreamKind::Main => (None, &main_tools),
            StreamKind::Agent => (agent_static, &agent_tools),
        };
        let inputs = StreamInputs {
            t,
            tok,
            origin,
            fixed_static: fixed,
            tool_names: tools,
            opts,
            main_ttl,
            compaction_logged,
        };
        let b = build_stream(s, inputs);
        if s.kind == StreamKind::Agent && agent_static.is_none() {
            agent_static = Some(b.static_tokens);
        }
        if s.kind == StreamKind::Main {
            main_ttl = b.imported.ttl;
        }
        out.push(b.imported);
    }
    out
}

/// The static prefix the subagents of one session share: they have one system prompt and
/// toolset, sized once so their prompts share the prefix, as the recorded reads show they do.
/// In `billed` mode, where one agent's first request read what an earlier agent wrote (the
/// recorded read stops at the last cached breakpoint before the first message); in
/// `transcript` mode (a cache read must not size anything there), each agent's first prompt
/// less its first messages' weight, the smallest of them (a block every agent's first prompt
/// can hold). `None`: estimated from the first agent stream.
fn agent_static(t: &Transcript, opts: &ImportOptions, tok: &Tokenizer) -> Option<u64> {
    let agents = || t.streams.iter().filter(|s| s.kind == StreamKind::Agent);
    if opts.events != Events::Billed {
        return agents().filter_map(|s| first_prompt_static(s, tok)).min();
    }
    agents()
        .filter_map(|s| s.requests().next())
        .map(|r| r.usage)
        .filter(|u| u.cache_read_input_tokens > 0 && u.cache_read_input_tokens < u.prompt_tokens())
        .map(|u| u.cache_read_input_tokens)
        .min()
}

/// The tool list every stream of a kind gets (the union of the tools its streams call), since
/// the harness sends one toolset per kind: otherwise streams could not share a prefix.
fn tools_of(t: &Transcript, kind: StreamKind) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in t.streams.iter().filter(|s| s.kind == kind) {
        for r in s.requests() {
            for b in &r.blocks {
                if let Block::ToolUse { name, .. } = b {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
            }
        }
    }
    // Claude Code offers its core toolset whether or not a session calls it.
    if t.streams
        .first()
        .is_some_and(|s| s.harness == Harness::ClaudeCode)
    {
        for b in super::tool_sizes::BUILT_IN {
            if !names.iter().any(|n| n == b) {
                names.push(b.to_string());
            }
        }
    }
    names.sort();
    names
}

/// A stream's static prefix as its first prompt shows it: the recorded prompt size less the
/// token weight of the messages before its first request.
fn first_prompt_static(s: &Stream, tok: &Tokenizer) -> Option<u64> {
    let mut messages = 0u64;
    for i in &s.items {
        match i {
            Item::Request(r) => return Some(r.usage.prompt_tokens().saturating_sub(messages)),
            Item::User { text, .. } | Item::Reminder { text, .. } => messages += weight(tok, text),
            Item::ToolResult { text, .. } => messages += weight(tok, text),
            Item::Compaction { summary, .. } => messages += weight(tok, summary),
            _ => {}
        }
    }
    None
}

struct Built {
    imported: ImportedScenario,
    static_tokens: u64,
}

/// A piece of conversation between two requests, with its weight and its allocated size.
struct Piece<'a> {
    item: Option<&'a Item>,
    weight: u64,
    tokens: u64,
}

/// The text an item puts into the prompt (none for events).
fn text_of(i: &Item) -> String {
    match i {
        Item::User { text, .. } | Item::Reminder { text, .. } => text.clone(),
        Item::ToolResult { text, .. } => text.clone(),
        Item::Compaction { summary, .. } => summary.clone(),
        Item::Mode { .. }
        | Item::Request(_)
        | Item::PrefixChange { .. }
        | Item::Cleared { .. }
        | Item::Unlogged { .. } => String::new(),
    }
}

/// Items that put text into the prompt (the others are events).
fn carries_tokens(i: &Item) -> bool {
    matches!(
        i,
        Item::User { .. }
            | Item::Reminder { .. }
            | Item::ToolResult { .. }
            | Item::Compaction { .. }
    )
}

fn weight(tok: &Tokenizer, text: &str) -> u64 {
    if text.is_empty() {
        0
    } else {
        tok.count_text(text) as u64
    }
}

/// Splits `total` over `weights` in proportion (largest remainder; ties to the earlier piece).
pub fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u64 = weights.iter().sum();
    if weights.is_empty() {
        return Vec::new();
    }
    if sum == 0 {
        let mut v = vec![0; weights.len()];
        v[0] = total;
        return v;
    }
    let mut parts: Vec<u64> = weights
        .iter()
        .map(|&w| (total as u128 * w as u128 / sum as u128) as u64)
        .collect();
    let mut rest = total - parts.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| {
        let rem = (total as u128 * weights[i] as u128) % sum as u128;
        (std::cmp::Reverse(rem), i)
    });
    for &i in order.iter().cycle() {
        if rest == 0 {
            break;
        }
        parts[i] += 1;
        rest -= 1;
    }
    parts
}

fn user_tokens(n: u64) -> Step {
    Step::User(TextOrContent::Content(Content::tokens(clamp(n))))
}

/// The user step of one logged piece of the prompt, `n` tokens: an attachment's reminder is
/// appended after the request's message breakpoint (in the bundled 2.1.157 session both
/// requests that carried one, a `skill_listing` and a `task_reminder`, left it unwritten:
/// 2,892 and 131 uncached input tokens, and the next request read up to the block before it).
fn piece_step(i: &Item, n: u64) -> Step {
    let mut content = Content::tokens(clamp(n));
    content.reminder = matches!(i, Item::Reminder { .. });
    Step::User(TextOrContent::Content(content))
}

fn clamp(n: u64) -> u32 {
    n.min(u32::MAX as u64) as u32
}

fn wait(ms: u64) -> Option<Step> {
    (ms > 0).then(|| Step::Wait(WaitDuration::new(std::time::Duration::from_millis(ms))))
}

fn is_write(name: &str) -> bool {
    DEFAULT_WRITE_TOOLS.contains(&name)
}

/// What the scenario of one stream is built from, besides the stream itself.
#[derive(Clone, Copy)]
struct StreamInputs<'a> {
    /// The transcript the stream belongs to.
    t: &'a Transcript,
    /// Weights the split of recorded prompt growth over the pieces of text.
    tok: &'a Tokenizer,
    /// Epoch ms of the transcript's earliest record: scenario time 0.
    origin: u64,
    /// The static prefix's size when fixed by the session (subagents share one), else `None`.
    fixed_static: Option<u64>,
    /// The tools every stream of this kind lists.
    tool_names: &'a [String],
    opts: &'a ImportOptions,
    /// The main thread's TTL class (a fork writes it).
    main_ttl: Option<Ttl>,
    /// A fork file (`agent-acompact-*`) logs the compaction's summarisation request itself, so
    /// the main stream's `compact` steps send none of their own.
    compaction_logged: bool,
}

/// A first response record written more than this long after its input means the request was
/// sent late (the machine slept), not that the model took this long to answer: no first block of
/// a real request takes 10 minutes.
pub const LATE_SEND_MS: u64 = 10 * 60 * 1000;

/// The mark of an event placed from a billed cache read (`billed` mode only).
pub const INFERRED: &str = "inferred from billed cache_read";

/// A user message that starts a conversation from an approved plan (Claude Code's "clear
/// context" approval).
fn starts_from_plan(i: &&Item) -> bool {
    matches!(i, Item::User { text, .. } if text.trim_start().starts_with("Implement the following plan"))
}

/// The tool_use id of a tool-result item.
fn tool_id(i: &Item) -> Option<String> {
    match i {
        Item::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
        _ => None,
    }
}

/// Shrinks the mirrored conversation in place: keeps the longest run of whole messages within
/// `keep` tokens, and a summary that brings the conversation to `total` tokens.
fn shrink(msgs: &mut Vec<(u64, Option<String>)>, keep: u64, total: u64) -> Step {
    let keep = keep.min(total);
    let mut kept = 0u64;
    let mut n = 0;
    for (size, _) in msgs.iter() {
        if kept + size > keep {
            break;
        }
        kept += size;
        n += 1;
    }
    msgs.truncate(n);
    let summary = total - kept;
    msgs.push((summary, None));
    // A clearing in place sends no request of its own.
    Step::Compact(Compact {
        summary_tokens: Some(clamp(summary)),
        keep_tokens: Some(clamp(kept)),
        request: false,
        ..Compact::default()
    })
}

/// Name of the context block an imported scenario declares for early-block edits.
pub const CONTEXT_BLOCK: &str = "early-context";

/// A full compaction. Claude Code sends a summarisation request with the conversation's own
/// tools, system prompt and messages, then the summary instruction (its cache-safe fork, see
/// the `compact` step), so it reads and refreshes the cached prefix; the transcript logs no
/// assistant record of it. With `request`, it is replayed as a request that yields no row (so
/// the rows stay aligned with the recorded requests) but refreshes the entries it reads.
fn compact(tokens: u64, request: bool) -> Step {
    Step::Compact(Compact {
        summary_tokens: Some(clamp(tokens)),
        request,
        ..Compact::default()
    })
}

/// The TTL a stream's harness asked for, and where that comes from (see [`TtlChoice`]).
/// `main` is the main thread's class, which a fork of it asks for too.
fn stream_ttl(
    s: &Stream,
    rounds: &Rounds<'_>,
    opts: &ImportOptions,
    main: Option<Ttl>,
) -> (Option<Ttl>, String) {
    let kind = match s.kind {
        StreamKind::Main => "main thread",
        StreamKind::Agent if is_fork(&s.name) => "fork of the main thread",
        StreamKind::Agent => "subagent",
    };
    match opts.ttl {
        TtlChoice::Fixed(t) => return (Some(t), "--ttl".into()),
        TtlChoice::Auto => {
            if let Some(t) = billed_class(rounds.iter().map(|(r, _)| &r.usage)) {
                return (
                    Some(t),
                    format!("{kind}: the class its written tokens were billed at"),
                );
            }
            if let (true, Some(t)) = (is_fork(&s.name), main) {
                return (Some(t), format!("{kind}: the main thread's class"));
            }
        }
        TtlChoice::Version => {}
    }
    match harness_ttl(s.version.as_deref(), s.kind) {
        Some(t) => (
            Some(t),
            format!(
                "Claude Code {} {kind}",
                s.version.as_deref().unwrap_or_default()
            ),
        ),
        None => (None, "unknown harness version".into()),
    }
}

/// The TTL class most of these requests' written tokens were billed at (`None` when nothing was
/// written or the 5 m / 1 h split is not recorded). Only the class is used, never an amount.
pub fn billed_class<'a>(usages: impl Iterator<Item = &'a Usage>) -> Option<Ttl> {
    let (mut five, mut hour) = (0u64, 0u64);
    for u in usages {
        five = five.saturating_add(u.creation_5m.unwrap_or(0));
        hour = hour.saturating_add(u.creation_1h.unwrap_or(0));
    }
    match (five, hour) {
        (0, 0) => None,
        (f, h) if h > f => Some(Ttl::OneHour),
        _ => Some(Ttl::FiveMinutes),
    }
}

/// Whether a subagent stream is a cache-safe fork of the main thread: Claude Code's compaction,
/// prompt-suggestion and aside-question helpers (`agent-acompact-*`, `agent-aprompt_suggestion-*`,
/// `agent-aside_question-*`) re-send the main thread's prompt with one instruction appended, and
/// write its TTL class (shared notes on Claude Code records).
pub fn is_fork(stream: &str) -> bool {
    [
        "agent-acompact-",
        "agent-aprompt_suggestion-",
        "agent-aside_question-",
    ]
    .iter()
    .any(|p| stream.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_is_proportional_and_exact() {
        // 100 over 1:3 -> 25, 75; 10 over 1:1:1 -> 3.33 each, the remainder 1 to the first.
        assert_eq!(apportion(100, &[1, 3]), vec![25, 75]);
        assert_eq!(apportion(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(apportion(7, &[0, 0]), vec![7, 0]);
        assert_eq!(apportion(0, &[5]), vec![0]);
    }

    #[test]
    fn model_family_strips_a_date_suffix_only() {
        assert_eq!(model_family("claude-sonnet-4-20250514"), "claude-sonnet-4");
        assert_eq!(model_family("claude-sonnet-4-5"), "claude-sonnet-4-5");
        assert_eq!(model_family("gpt-5-codex"), "gpt-5-codex");
    }
}
