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

use super::{
    harness_ttl, ApiRequest, Block, Harness, Item, PrefixChange, Stream, StreamKind, Transcript,
    Usage,
};
use crate::plan_mode::Mode;
use crate::prompt::{Encoding, Tokenizer, Ttl};
use crate::scenario::{
    Access, Blocks, Call, Compact, Content, ContextBlock, Reminders, Scenario, Step, Target,
    TextOrContent, Timing, ToolDef, Turn, WaitDuration, DEFAULT_WRITE_TOOLS,
};

/// Where the events a scenario replays (breaks of the prompt prefix) come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
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
    pub fn parse(s: &str) -> Result<TtlChoice, String> {
        match s {
            "auto" => Ok(TtlChoice::Auto),
            "version" => Ok(TtlChoice::Version),
            other => super::parse_ttl(other)
                .map(TtlChoice::Fixed)
                .map_err(|_| format!("`{other}` is not a TTL choice; use auto, version, 5m or 1h")),
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
    pub request_id: String,
    /// 1-based transcript line of its first record.
    pub line: usize,
    /// The model id as recorded.
    pub model: String,
    pub usage: Usage,
    /// When it was sent, in ms after the transcript's first record.
    pub sent_at_ms: u64,
    /// Events recognised between the previous request and this one (a compaction, an early
    /// context-block edit, a tool-list change), as emitted into the scenario; validate lists them
    /// next to the request.
    pub events: Vec<String>,
    /// The permission mode the transcript was in when it was sent.
    pub mode: Mode,
    /// When its response finished (its last record), in ms after the transcript's first record.
    pub finished_at_ms: u64,
}

/// When a request was sent, when its response began to be written (its first record) and when it
/// finished (its last record), in ms after the transcript's first record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendTime {
    pub sent_ms: u64,
    pub visible_ms: u64,
    pub finished_ms: u64,
}

/// The scenario of one stream, with what was recorded for each of its requests.
#[derive(Debug, Clone)]
pub struct ImportedScenario {
    pub stream: String,
    pub kind: StreamKind,
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
    pub fn to_toml(&self, source: &str) -> Result<String, String> {
        let body = toml::to_string(&self.scenario)
            .map_err(|e| format!("cannot write the scenario as TOML: {e}"))?;
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
pub fn check_sizes(t: &Transcript) -> Result<(), String> {
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
                    return Err(format!(
                        "{}: line {} (request {}, stream {}): recorded usage of {} tokens is larger than any prompt (limit {limit})\n  hint: the usage counts of this record are corrupt; fix or remove the line",
                        t.source,
                        r.line,
                        comment_safe(&r.request_id),
                        s.name,
                        prompt.map_or("more than 2^64".to_string(), |p| p.max(biggest).to_string())
                    ))
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
    let tok = Tokenizer::new(opts.encoding);
    let origin = t
        .streams
        .iter()
        .flat_map(|s| s.items.iter().map(Item::at_ms))
        .min()
        .unwrap_or(0);
    // Subagents of one session share one system prompt and toolset: size it once (from the first
    // agent stream) so their prompts share the prefix, as the recorded reads show they do.
    // The end of the agents' shared static prefix is measured where one agent's first request
    // read what an earlier agent wrote (the recorded read stops at the last cached breakpoint
    // before the first message); without such a read it is estimated from the first agent.
    // Only in `billed` mode: a cache read must not size anything in `transcript` mode.
    let billed = opts.events == Events::Billed;
    let mut agent_static: Option<u64> = t
        .streams
        .iter()
        .filter(|s| billed && s.kind == StreamKind::Agent)
        .filter_map(|s| s.requests().next())
        .map(|r| r.usage)
        .filter(|u| u.cache_read_input_tokens > 0 && u.cache_read_input_tokens < u.prompt_tokens())
        .map(|u| u.cache_read_input_tokens)
        .min();
    // In `transcript` mode: each agent's first prompt less its first messages' weight, the
    // smallest of them (a block every agent's first prompt can hold).
    if !billed {
        agent_static = t
            .streams
            .iter()
            .filter(|s| s.kind == StreamKind::Agent)
            .filter_map(|s| first_prompt_static(s, &tok))
            .min();
    }
    // Every stream of a kind gets the same tool list (the union of the tools its streams call),
    // since the harness sends one toolset per kind: otherwise streams could not share a prefix.
    let tools_of = |kind: StreamKind| -> Vec<String> {
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
    };
    let main_tools = tools_of(StreamKind::Main);
    let agent_tools = tools_of(StreamKind::Agent);
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
            tok: &tok,
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

fn build_stream(s: &Stream, inputs: StreamInputs<'_>) -> Built {
    let StreamInputs {
        t,
        tok,
        origin,
        fixed_static,
        tool_names,
        opts,
        main_ttl,
        compaction_logged,
    } = inputs;
    // Cut the stream into: items before the first request, then (request, items after it).
    let mut pre: Vec<&Item> = Vec::new();
    let mut rounds: Vec<(&ApiRequest, Vec<&Item>)> = Vec::new();
    for item in &s.items {
        match item {
            Item::Request(r) => rounds.push((r, Vec::new())),
            other => match rounds.last_mut() {
                Some((_, after)) => after.push(other),
                None => pre.push(other),
            },
        }
    }
    let mut notes = Vec::new();
    let first = rounds[0].0;
    let model = majority_family(rounds.iter().map(|(r, _)| r.model.as_str()));
    for (r, _) in &rounds {
        if model_family(&r.model) != model {
            notes.push(format!(
                "request {} ran on {} (the scenario replays every request on {model})",
                r.request_id, r.model
            ));
        }
    }

    let text_of = |i: &Item| -> String {
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
    };
    // Items that put text into the prompt (the others are events).
    let carries_tokens = |i: &Item| {
        matches!(
            i,
            Item::User { .. }
                | Item::Reminder { .. }
                | Item::ToolResult { .. }
                | Item::Compaction { .. }
        )
    };
    let billed = opts.events == Events::Billed;

    // The first prompt: static prefix + first messages.
    let p1 = first.usage.prompt_tokens();
    let pre_weights: Vec<u64> = pre
        .iter()
        .filter(|i| carries_tokens(i))
        .map(|i| weight(tok, &text_of(i)))
        .collect();
    let pre_sum: u64 = pre_weights.iter().sum();
    // The static prefix is sent with every request of the stream: it never exceeds a later
    // prompt of the stream's own model (a first request that carried context the transcript
    // does not log, or a side request on another model, must not size it).
    let cap = rounds
        .iter()
        .skip(1)
        .filter(|(r, _)| model_family(&r.model) == model)
        .map(|(r, _)| r.usage.prompt_tokens().saturating_sub(1))
        .min()
        .unwrap_or(u64::MAX);
    let static_tokens = fixed_static
        .unwrap_or_else(|| p1.saturating_sub(pre_sum))
        .min(p1)
        .min(cap);
    let pre_sizes = apportion(p1 - static_tokens, &pre_weights);
    let shared_prefix = match s.kind {
        StreamKind::Main => first.usage.cache_read_input_tokens.min(static_tokens),
        StreamKind::Agent => 0,
    };
    // Only the main stream is split at the block an earlier session wrote, and only in `billed`
    // mode (the split is placed from a cache read); subagents share one static block.
    // The tools array's share of the static prefix: estimated from Claude Code's published tool
    // descriptions (the transcript logs no definition), the system block holds the rest.
    let split =
        billed && s.kind == StreamKind::Main && shared_prefix > 0 && shared_prefix < static_tokens;
    let tool_tokens: Vec<u32> = match s.harness {
        Harness::ClaudeCode => super::tool_sizes::sized(
            tool_names,
            if split { shared_prefix } else { static_tokens },
        ),
        Harness::Codex => vec![0; tool_names.len()],
    };
    let tools_size: u64 = tool_tokens.iter().map(|&n| n as u64).sum();
    let system = if split {
        Blocks::Many(vec![
            Content::tokens(clamp(shared_prefix - tools_size)),
            Content::tokens(clamp(static_tokens - shared_prefix)),
        ])
    } else {
        Blocks::One(Content::tokens(clamp(static_tokens - tools_size)))
    };

    // What happened between consecutive requests, judged from the usage and the records.
    // Where each turn began (Codex: the reasoning of a turn is dropped when the next begins).
    let turn_starts = turn_starts(&rounds);
    let boundaries: Vec<Boundary> = rounds
        .windows(2)
        .enumerate()
        .map(|(k, w)| {
            let (r, after) = (&w[0].0, &w[0].1);
            let next = w[1].0;
            let compacted = after.iter().any(|i| matches!(i, Item::Compaction { .. }));
            let new_turn = after.iter().any(|i| matches!(i, Item::User { .. }));
            if s.harness.reasoning_in_turn() && new_turn && !compacted {
                let start = rounds[turn_starts[k]].0.usage.prompt_tokens();
                return Boundary::TurnStart(start.saturating_sub(static_tokens));
            }
            let cleared = after.iter().find_map(|i| match i {
                Item::Cleared { tool_use_ids, .. } => Some(tool_use_ids.clone()),
                _ => None,
            });
            let change = |c: PrefixChange| {
                after.iter().find_map(|i| match i {
                    Item::PrefixChange { change, what, .. } if *change == c => Some(what.clone()),
                    _ => None,
                })
            };
            if compacted {
                Boundary::Compact
            } else if let Some(ids) = cleared {
                Boundary::Cleared(ids)
            } else if next.usage.prompt_tokens() < r.usage.prompt_tokens() {
                Boundary::Rewind
            } else if let Some(what) = change(PrefixChange::Tools) {
                Boundary::ToolsChanged(format!("tools changed ({what})"), false)
            } else if let Some(what) = change(PrefixChange::EarlyContext) {
                Boundary::EarlyEdit(format!("early context block edited ({what})"), false)
            } else if billed && model_family(&r.model) == model_family(&next.model) {
                // A model switch explains a break by itself (caches are per model).
                classify_break(r, next, static_tokens, opts).unwrap_or(Boundary::None)
            } else {
                Boundary::None
            }
        })
        .collect();
    // An early-block edit needs the block declared: the stream's first user message (where the
    // harness injects memory and instruction files) becomes the scenario's context block.
    let first_user = pre.iter().position(|i| matches!(i, Item::User { .. }));
    let mut pre_sizes = pre_sizes;
    let context_tokens = match first_user {
        Some(j)
            if boundaries
                .iter()
                .any(|b| matches!(b, Boundary::EarlyEdit(..))) =>
        {
            let k = pre[..j].iter().filter(|i| carries_tokens(i)).count();
            Some(std::mem::take(&mut pre_sizes[k]))
        }
        _ => None,
    };
    let context_size = context_tokens.unwrap_or(0);

    let mut steps: Vec<Step> = Vec::new();
    let mut requests = Vec::new();
    let mut mode = s.initial_mode;
    let mut pre_plan = mode;
    let start = rounds[0]
        .0
        .first_at_ms
        .min(pre.first().map_or(u64::MAX, |i| i.at_ms()));
    steps.extend(wait(start.saturating_sub(origin)));
    // The conversation as the replay will hold it: (tokens, tool_use_id of a tool result) per
    // message, so a clearing in place knows where the first cleared result sits.
    let mut msgs: Vec<(u64, Option<String>)> = Vec::new();
    if context_tokens.is_some() {
        msgs.push((context_size, None));
    }
    let mut sizes = pre_sizes.into_iter();
    for (j, i) in pre.iter().enumerate() {
        match i {
            Item::Mode { mode: m, .. } => {
                steps.push(Step::Mode(*m));
                mode = *m;
            }
            _ if !carries_tokens(i) => {}
            _ => {
                let n = sizes.next().unwrap_or(0);
                if !(context_tokens.is_some() && Some(j) == first_user) {
                    steps.push(piece_step(i, n));
                    msgs.push((n, tool_id(i)));
                }
            }
        }
    }

    let sent_at = |r: &ApiRequest, before: &[&Item]| -> u64 {
        before
            .iter()
            .map(|i| i.at_ms())
            .filter(|&a| a <= r.first_at_ms)
            .max()
            .unwrap_or(r.first_at_ms)
    };
    // The replay's clock stands at `clock` (recorded time) after each request: when its last
    // record was written, i.e. when the response finished. Providers' TTLs run from there (a
    // 5 m entry still serves a request sent 5 m 10 s after the previous one was *sent* when
    // that one streamed for 20 s); the engine adds its own TTFT on top, which stands for the
    // time the response took.
    let mut clock = start;
    let mut events_next: Vec<String> = Vec::new();
    let mut inferred_steps: Vec<usize> = Vec::new();
    let mut timeline: Vec<SendTime> = Vec::new();
    for (k, (r, after)) in rounds.iter().enumerate() {
        // Sent when the last item before it was written; a response written minutes after that
        // (a slow first block) was still sent then. A response written more than
        // `LATE_SEND_MS` after its input was not that slow: the machine slept and the request
        // went out when it woke (shared notes: responses 53-130 min after their input), so it
        // was sent at its first record.
        let input = if k == 0 {
            sent_at(first, &pre)
        } else {
            sent_at(r, &rounds[k - 1].1)
        };
        let sent = if r.first_at_ms.saturating_sub(input) > LATE_SEND_MS {
            r.first_at_ms
        } else {
            input
        };
        steps.extend(wait(sent.saturating_sub(clock)));
        clock = t
            .finished_at_ms
            .get(&r.request_id)
            .copied()
            .unwrap_or(r.first_at_ms)
            .max(sent);
        let visible = r.first_at_ms.clamp(sent, clock);
        timeline.push(SendTime {
            sent_ms: sent.saturating_sub(origin),
            visible_ms: visible.saturating_sub(origin),
            finished_ms: clock.saturating_sub(origin),
        });
        if k > 0 && model_family(&rounds[k - 1].0.model) != model_family(&r.model) {
            events_next.push(format!(
                "model changed from {} to {} (each model has its own cache)",
                comment_safe(&rounds[k - 1].0.model),
                comment_safe(&r.model)
            ));
        }
        requests.push(RecordedRequest {
            request_id: r.request_id.clone(),
            line: r.line,
            model: r.model.clone(),
            usage: r.usage,
            sent_at_ms: sent.saturating_sub(origin),
            events: std::mem::take(&mut events_next),
            mode,
            finished_at_ms: clock.saturating_sub(origin),
        });

        let mut implicit_summary: Option<u64> = None;
        // What this reply and the items after it add to the next prompt.
        let reply_text: String = r
            .blocks
            .iter()
            .map(Block::visible_text)
            .collect::<Vec<_>>()
            .join("\n");
        // Within a turn, a harness that re-sends the turn's reasoning (Codex) repeats it in the
        // next prompt: it is part of the reply the next prompt starts with, and the cache holds
        // it as generated. (The recorded reasoning count is output usage, not a cache figure.)
        let carried = s.harness.reasoning_in_turn()
            && boundaries
                .get(k)
                .is_some_and(|b| !matches!(b, Boundary::TurnStart(_) | Boundary::Compact));
        let reasoning = if carried { r.usage.reasoning_tokens } else { 0 };
        let mut pieces = vec![Piece {
            item: None,
            weight: weight(tok, &reply_text),
            tokens: 0,
        }];
        for i in after.iter().filter(|i| carries_tokens(i)) {
            pieces.push(Piece {
                item: Some(i),
                weight: weight(tok, &text_of(i)),
                tokens: 0,
            });
        }
        let boundary = boundaries.get(k).cloned().unwrap_or(Boundary::None);
        match rounds.get(k + 1) {
            Some((next, _)) if boundary == Boundary::Compact => {
                // Pieces before the summary are dropped by the compaction: their own sizes. The
                // next prompt is static + context + summary + what follows the summary.
                let cut = pieces
                    .iter()
                    .position(|p| matches!(p.item, Some(Item::Compaction { .. })))
                    .unwrap_or(pieces.len());
                for p in pieces[..cut].iter_mut() {
                    p.tokens = p.weight;
                }
                let budget = next
                    .usage
                    .prompt_tokens()
                    .saturating_sub(static_tokens + context_size);
                let mut w: Vec<u64> = pieces[cut..].iter().map(|p| p.weight.max(1)).collect();
                if cut == pieces.len() {
                    w.push(1); // no summary record: the whole budget is the summary
                }
                let parts = apportion(budget, &w);
                for (p, n) in pieces[cut..].iter_mut().zip(&parts) {
                    p.tokens = *n;
                }
                implicit_summary = (cut == pieces.len()).then(|| parts[parts.len() - 1]);
                let what = format!(
                    "compaction: {} -> {} tokens, replayed as a `compact` step",
                    r.usage.prompt_tokens(),
                    next.usage.prompt_tokens()
                );
                notes.push(format!("request {}: {what}", next.request_id));
                events_next.push(what);
            }
            Some(_)
                if matches!(
                    boundary,
                    Boundary::Cleared(_) | Boundary::Rewind | Boundary::TurnStart(_)
                ) =>
            {
                // The prompt shrank in place: new pieces keep their own sizes; the step that
                // shrinks the conversation makes up the rest (below).
                for p in pieces.iter_mut() {
                    p.tokens = p.weight;
                }
            }
            Some((next, _)) => {
                let p_now = r.usage.prompt_tokens();
                let p_next = next.usage.prompt_tokens();
                let growth = p_next - p_now;
                if carried && pieces.len() > 1 {
                    // The whole response (reasoning and visible output, as billed) is repeated:
                    // its size is known; the pieces after it share the rest.
                    pieces[0].tokens = r.usage.output_tokens.min(growth);
                    let w: Vec<u64> = pieces[1..].iter().map(|p| p.weight).collect();
                    let rest = apportion(growth - pieces[0].tokens, &w);
                    for (p, n) in pieces[1..].iter_mut().zip(rest) {
                        p.tokens = n;
                    }
                } else {
                    let w: Vec<u64> = pieces.iter().map(|p| p.weight).collect();
                    for (p, n) in pieces.iter_mut().zip(apportion(growth, &w)) {
                        p.tokens = n;
                    }
                }
                let what = match &boundary {
                    Boundary::EarlyEdit(w, _) if context_tokens.is_some() => {
                        Some(format!("{w}; replayed as an `edit_context` step"))
                    }
                    Boundary::EarlyEdit(w, _) => Some(format!(
                        "{w}; no first user message to hold the block: not replayed"
                    )),
                    Boundary::ToolsChanged(w, _) => {
                        Some(format!("{w}; replayed as an `add_tool` step"))
                    }
                    _ => None,
                };
                if let Some(what) = what {
                    notes.push(format!("request {}: {what}", next.request_id));
                    events_next.push(what);
                }
            }
            None => {
                for p in pieces.iter_mut() {
                    p.tokens = p.weight;
                }
            }
        }

        // The assistant step: calls carry the results that answer them; the rest follows as user
        // text (denied calls' results, results of calls from earlier replies, user messages).
        let mut calls = Vec::new();
        let mut answered = vec![false; pieces.len()];
        let mut plan_answer: Option<Step> = None;
        let mut trailing_after_answer: u64 = 0;
        for b in &r.blocks {
            let Block::ToolUse { id, name, input } = b else {
                continue;
            };
            let result = pieces.iter().enumerate().skip(1).find(|(_, p)| {
                matches!(p.item, Some(Item::ToolResult { tool_use_id, .. }) if tool_use_id == id)
            });
            let (idx, size, is_error) = match result {
                Some((j, p)) => {
                    let err = matches!(p.item, Some(Item::ToolResult { is_error: true, .. }));
                    (Some(j), p.tokens, err)
                }
                None => (None, 0, false),
            };
            let mut call = Call {
                tool: name.clone(),
                ..Call::default()
            };
            match name.as_str() {
                "EnterPlanMode" | "ExitPlanMode" if idx.is_none() => {
                    // Unanswered (the log ends, or the answer was lost): the state machine would
                    // wait for it forever, so the call is left out.
                    notes.push(format!(
                        "request {}: {name} has no result in the transcript; the call is left out",
                        r.request_id
                    ));
                    continue;
                }
                "EnterPlanMode" if mode == Mode::Plan => {
                    notes.push(format!(
                        "request {}: EnterPlanMode while already in plan mode; the call is left out and its result kept as text",
                        r.request_id
                    ));
                    continue;
                }
                "EnterPlanMode" => {
                    // Deferred: the answer is an approve/decline step; its result text follows.
                    plan_answer = Some(if is_error {
                        Step::Decline(Target::Enter)
                    } else {
                        pre_plan = mode;
                        mode = Mode::Plan;
                        Step::Approve(Target::Enter.into())
                    });
                    trailing_after_answer += size;
                    if let Some(j) = idx {
                        answered[j] = true;
                    }
                }
                "ExitPlanMode" => {
                    if mode != Mode::Plan {
                        notes.push(format!(
                            "request {}: ExitPlanMode outside plan mode in the transcript; a `mode = \"plan\"` step is inserted before it",
                            r.request_id
                        ));
                        steps.push(Step::Mode(Mode::Plan));
                        pre_plan = mode;
                        mode = Mode::Plan;
                    }
                    // Claude Code's "clear context and implement" approval is logged as an error
                    // result (the plan tool's call was cut off), then a user message that starts
                    // the new conversation from the plan: an approval, not a rejection.
                    let clears = is_error && after.iter().any(starts_from_plan);
                    if clears {
                        notes.push(format!(
                            "request {}: plan approved with \"clear context\": the conversation restarts from the plan",
                            r.request_id
                        ));
                    }
                    if is_error && !clears {
                        // The machine reads the plan from the call; a rejection's result carries
                        // only the feedback, so the plan's size is its own token count.
                        call.plan_tokens = Some(clamp(weight(tok, input).max(1)));
                        plan_answer = Some(Step::Reject(TextOrContent::Content(Content::tokens(
                            clamp(size),
                        ))));
                    } else {
                        call.plan_tokens = Some(clamp(size));
                        plan_answer = Some(Step::Approve(Target::Exit.into()));
                        // A session that started in plan mode leaves it for the default mode.
                        mode = match pre_plan {
                            Mode::Plan => Mode::Default,
                            m => m,
                        };
                    }
                    if let Some(j) = idx {
                        answered[j] = true;
                    }
                }
                _ => {
                    let denied = mode == Mode::Plan && is_write(name);
                    if !denied {
                        if let Some(j) = idx {
                            call.result_tokens = Some(clamp(size));
                            answered[j] = true;
                        }
                    }
                }
            }
            calls.push(call);
        }
        let family = model_family(&r.model);
        steps.push(Step::Assistant(Turn {
            tokens: Some(clamp(pieces[0].tokens)),
            calls,
            model: (family != model && !r.model.is_empty()).then_some(family),
            // Recorded reasoning (Codex): billed output that the next prompt does not repeat,
            // unless the turn goes on (then it is part of the reply, above).
            reasoning_tokens: clamp(r.usage.reasoning_tokens - reasoning),
            ..Turn::default()
        }));
        msgs.push((pieces[0].tokens, None));
        for (p, _) in pieces.iter().zip(&answered).filter(|(_, a)| **a) {
            msgs.push((p.tokens, p.item.and_then(tool_id)));
        }
        if let Some(a) = plan_answer {
            steps.push(a);
        }
        if trailing_after_answer > 0 {
            steps.push(user_tokens(trailing_after_answer));
        }
        let p_next = rounds.get(k + 1).map(|(n, _)| n.usage.prompt_tokens());
        // Tokens of the pieces that follow each item of `after` (for a clearing in place).
        let tokens_after = |idx: usize| -> u64 {
            let before = after[..=idx].iter().filter(|i| carries_tokens(i)).count();
            pieces[1 + before..].iter().map(|p| p.tokens).sum()
        };
        // Everything not carried by a call, in order; mode switches where they happened.
        let mut piece_iter = pieces.iter().zip(answered.iter()).skip(1);
        for (idx, i) in after.iter().enumerate() {
            match i {
                Item::Mode { mode: m, .. } => {
                    if *m != mode {
                        if *m == Mode::Plan {
                            pre_plan = mode;
                        }
                        steps.push(Step::Mode(*m));
                        mode = *m;
                    }
                }
                Item::Compaction { at_ms, .. } => {
                    if let Some((p, _)) = piece_iter.next() {
                        // The summarisation request, sent with the conversation's own tools,
                        // system and messages: logged by no assistant record, placed at the
                        // boundary record (its summary arrived by then).
                        steps.extend(wait(at_ms.saturating_sub(clock)));
                        clock = clock.max(*at_ms);
                        let at = clock.saturating_sub(origin);
                        if !compaction_logged {
                            timeline.push(SendTime {
                                sent_ms: at,
                                visible_ms: at,
                                finished_ms: at,
                            });
                        }
                        steps.push(compact(p.tokens, !compaction_logged));
                        msgs.clear();
                        if context_tokens.is_some() {
                            msgs.push((context_size, None));
                        }
                        msgs.push((p.tokens, None));
                    }
                }
                Item::Cleared { tool_use_ids, .. } => {
                    let (Some(p_next), Boundary::Cleared(_)) = (p_next, &boundary) else {
                        continue;
                    };
                    // The prefix before the first cleared result survives; the summary stands
                    // for the rest of the conversation with the results cleared.
                    let mut pos = 0u64;
                    let mut first_cleared = None;
                    for (n, id) in &msgs {
                        if id.as_ref().is_some_and(|id| tool_use_ids.contains(id)) {
                            first_cleared = Some(pos);
                            break;
                        }
                        pos += n;
                    }
                    let total = p_next
                        .saturating_sub(static_tokens)
                        .saturating_sub(tokens_after(idx));
                    let keep = first_cleared.unwrap_or(total);
                    steps.push(shrink(&mut msgs, keep, total));
                    let what = format!(
                        "tool results cleared in place (microcompact_boundary): the first {} message tokens kept",
                        keep.min(total)
                    );
                    notes.push(format!("request {}: {what}", rounds[k + 1].0.request_id));
                    events_next.push(what);
                }
                Item::Unlogged {
                    why,
                    instruction,
                    at_ms,
                } => {
                    // Sent and refreshing the cache, but not a recorded request.
                    steps.extend(wait(at_ms.saturating_sub(clock)));
                    clock = clock.max(*at_ms);
                    let at = clock.saturating_sub(origin);
                    timeline.push(SendTime {
                        sent_ms: at,
                        visible_ms: at,
                        finished_ms: at,
                    });
                    // Its own closing message is not in the log: one token stands for it (only
                    // its place matters: the entry it writes ends past the conversation). With
                    // none, the entry ends at the conversation's last message.
                    steps.push(Step::Assistant(Turn {
                        tokens: Some(u32::from(*instruction)),
                        unlogged: true,
                        ..Turn::default()
                    }));
                    events_next.push(format!("unlogged request: {why}"));
                }
                _ if !carries_tokens(i) => {}
                _ => {
                    if let Some((p, done)) = piece_iter.next() {
                        if !done && p.tokens > 0 {
                            steps.push(piece_step(i, p.tokens));
                            msgs.push((p.tokens, tool_id(i)));
                        }
                    }
                }
            }
        }
        if let Some(n) = implicit_summary {
            steps.push(compact(n, false));
            msgs.clear();
            if context_tokens.is_some() {
                msgs.push((context_size, None));
            }
            msgs.push((n, None));
        }
        match (boundaries.get(k), p_next) {
            (Some(Boundary::TurnStart(keep)), Some(p_next)) => {
                // A new turn: the last turn's reasoning items leave the prompt, which is the
                // same up to where that turn began.
                let total = p_next.saturating_sub(static_tokens);
                steps.push(shrink(&mut msgs, *keep, total));
            }
            (Some(Boundary::Rewind), Some(p_next)) => {
                // The prompt shrank with no record saying why (a rewind, a cleared attachment):
                // the conversation is edited at its first changed message. Where that is
                // follows from the sizes: the new prompt keeps the longest run of messages that,
                // with the text added since, fits in it.
                // A Claude Code prompt that shrinks with no record of why was, in most real cases,
                // sent as a new conversation (a rewind to the start, "clear context" after a plan,
                // a re-sent resume): the read falls back to the static prefix. A Codex prompt is
                // edited in place. See `Harness::shrink_restarts`.
                let total = p_next.saturating_sub(static_tokens);
                let what = if s.harness.shrink_restarts() {
                    steps.push(shrink(&mut msgs, 0, total));
                    "a new conversation after the static prefix"
                } else {
                    // Edited at its first changed message: the new prompt keeps the longest
                    // run of messages that, with the text added since, fits in it.
                    let new: u64 = pieces
                        .iter()
                        .zip(&answered)
                        .skip(1)
                        .filter(|(_, a)| !**a)
                        .map(|(p, _)| p.tokens)
                        .sum();
                    steps.push(shrink(&mut msgs, total.saturating_sub(new), total));
                    "an edit at the first changed message"
                };
                let what = format!(
                    "prompt shrank from {} to {p_next} tokens with no compaction record: replayed as {what}",
                    r.usage.prompt_tokens()
                );
                notes.push(format!("request {}: {what}", rounds[k + 1].0.request_id));
                events_next.push(what);
            }
            (Some(Boundary::EarlyEdit(_, inferred)), _) if context_tokens.is_some() => {
                if *inferred {
                    inferred_steps.push(steps.len());
                }
                steps.push(Step::EditContext(ContextBlock {
                    name: CONTEXT_BLOCK.into(),
                    tokens: Some(clamp(context_size)),
                    ..ContextBlock::default()
                }));
            }
            (Some(Boundary::ToolsChanged(_, inferred)), _) => {
                if let Some((next, _)) = rounds.get(k + 1) {
                    if *inferred {
                        inferred_steps.push(steps.len());
                    }
                    steps.push(Step::AddTool(ToolDef {
                        name: format!("added-before-{}", next.request_id),
                        access: Some(Access::Read),
                        tokens: Some(0),
                        description: None,
                        schema: None,
                        deferred: false,
                        cache_control: None,
                    }));
                }
            }
            _ => {}
        }
    }

    let (ttl, ttl_source) = stream_ttl(s, &rounds, opts, main_ttl);
    let tools: Vec<ToolDef> = tool_names
        .iter()
        .zip(&tool_tokens)
        .map(|(n, &size)| ToolDef {
            name: n.clone(),
            access: Some(if is_write(n) {
                Access::Write
            } else {
                Access::Read
            }),
            // The transcript does not record tool definitions: an estimate (see
            // `tool_sizes`), 0 where none is published; the system blocks carry the rest of the
            // static prefix.
            tokens: Some(size),
            description: None,
            schema: None,
            deferred: false,
            cache_control: None,
        })
        .collect();
    let scenario = Scenario {
        name: format!("{}/{}", t.name, s.name),
        description: format!(
            "Imported from {} ({} stream, {} requests)",
            t.source,
            match s.kind {
                StreamKind::Main => "main",
                StreamKind::Agent => "subagent",
            },
            rounds.len()
        ),
        model,
        plan_model: None,
        tokenizer: Encoding::O200kBase,
        seed: 0,
        initial_mode: s.initial_mode,
        auto_available: true,
        external_channels: false,
        plans_dir: "plans".into(),
        system,
        plan_system: None,
        context: context_tokens
            .map(|n| {
                vec![ContextBlock {
                    name: CONTEXT_BLOCK.into(),
                    tokens: Some(clamp(n)),
                    ..ContextBlock::default()
                }]
            })
            .unwrap_or_default(),
        deferred_tools: Default::default(),
        ttl: None,
        keepalive_max_tokens: 1,
        tools,
        // Reminders and plan-tool results are part of the recorded growth: zero-sized here so
        // they are not counted twice.
        reminders: Reminders {
            plan_enter: Content::tokens(0),
            plan_exit: Content::tokens(0),
            denied: Content::tokens(0),
            enter_approved: Content::tokens(0),
            enter_declined: Content::tokens(0),
            plan_approved_header: 0,
            plan_rejected_header: 0,
        },
        team: None,
        // Time comes from the recorded timestamps (wait steps), not from defaults.
        timing: Timing {
            tool: std::time::Duration::ZERO,
            human: std::time::Duration::ZERO,
            typing: std::time::Duration::ZERO,
            decode_tokens_per_s: 1e9,
        },
        steps,
    };
    Built {
        imported: ImportedScenario {
            stream: s.name.clone(),
            kind: s.kind,
            scenario,
            requests,
            ttl,
            ttl_source,
            shared_prefix,
            notes,
            timeline,
            inferred_steps,
        },
        static_tokens,
    }
}

/// Why the recorded cache broke before `next`, when the break is not an idle gap longer than the
/// TTL (which the cache model replays from the timestamps): where the recorded read stopped
/// tells what changed. A read that still covers the static prefix (tools + system) means a block
/// early in the messages changed (a memory or instructions file injected near the start); a read
/// that stops inside it means the tools or the system prompt changed (e.g. tools added).
fn classify_break(
    prev: &ApiRequest,
    next: &ApiRequest,
    static_tokens: u64,
    opts: &ImportOptions,
) -> Option<Boundary> {
    let read = next.usage.cache_read_input_tokens;
    let p_prev = prev.usage.prompt_tokens();
    if read as f64 >= opts.break_threshold * p_prev as f64 {
        return None;
    }
    let ttl = prev.usage.written_ttl().unwrap_or(Ttl::FiveMinutes);
    if next.first_at_ms.saturating_sub(prev.first_at_ms) > ttl.millis() {
        return None;
    }
    Some(if read as f64 >= opts.static_match * static_tokens as f64 {
        Boundary::EarlyEdit(
            format!(
                "early context block edited, {INFERRED} (the read stops at {read}, the end of the {static_tokens}-token static prefix, within the {} TTL)",
                ttl.as_str()
            ),
            true,
        )
    } else {
        Boundary::ToolsChanged(
            format!(
                "tools or system prompt changed, {INFERRED} (the read stops at {read}, inside the {static_tokens}-token static prefix, within the {} TTL)",
                ttl.as_str()
            ),
            true,
        )
    })
}

/// A first response record written more than this long after its input means the request was
/// sent late (the machine slept), not that the model took this long to answer: no first block of
/// a real request takes 10 minutes.
pub const LATE_SEND_MS: u64 = 10 * 60 * 1000;

/// The mark of an event placed from a billed cache read (`billed` mode only).
pub const INFERRED: &str = "inferred from billed cache_read";

/// What happened between two consecutive requests of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Boundary {
    None,
    /// The conversation restarted from a summary (a `compact_boundary` / `isCompactSummary`).
    Compact,
    /// Tool results cleared in place (`microcompact_boundary`), by tool_use id.
    Cleared(Vec<String>),
    /// The prompt shrank with no record: edited at its first changed message.
    Rewind,
    /// A new user turn of a harness that re-sends only the current turn's reasoning (Codex):
    /// the conversation is kept up to where the last turn began (message tokens).
    TurnStart(u64),
    /// An early context block changed (description, inferred from a billed read).
    EarlyEdit(String, bool),
    /// The tools or the system prompt changed (description, inferred from a billed read).
    ToolsChanged(String, bool),
}

/// For each request, the index of the first request of its turn: a turn begins at the first
/// request and at every request after a user message.
fn turn_starts(rounds: &[(&ApiRequest, Vec<&Item>)]) -> Vec<usize> {
    let mut out = Vec::with_capacity(rounds.len());
    let mut start = 0;
    for k in 0..rounds.len() {
        if k > 0
            && rounds[k - 1]
                .1
                .iter()
                .any(|i| matches!(i, Item::User { .. }))
        {
            start = k;
        }
        out.push(start);
    }
    out
}

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
    rounds: &[(&ApiRequest, Vec<&Item>)],
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
