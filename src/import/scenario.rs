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

use super::{ApiRequest, Block, Item, Stream, StreamKind, Transcript, Usage};
use crate::plan_mode::Mode;
use crate::prompt::{Encoding, TokenSource, Tokenizer, Ttl};
use crate::scenario::{
    Access, Blocks, Call, Compact, Content, ContextBlock, Reminders, Scenario, Step, Target,
    TextOrContent, Timing, ToolDef, Turn, WaitDuration, DEFAULT_WRITE_TOOLS,
};

/// How a transcript is turned into scenarios.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Encoding whose token counts weight the split of recorded prompt growth.
    pub encoding: Encoding,
    /// A recorded break: a request reading less than this share of the previous prompt.
    pub break_threshold: f64,
    /// A break whose read reaches this share of the static prefix is an early-block edit;
    /// below it, the tools or system changed.
    pub static_match: f64,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            encoding: Encoding::O200kBase,
            break_threshold: 0.5,
            static_match: 0.9,
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
}

/// The scenario of one stream, with what was recorded for each of its requests.
#[derive(Debug, Clone)]
pub struct ImportedScenario {
    pub stream: String,
    pub kind: StreamKind,
    pub scenario: Scenario,
    /// Requests in order; the i-th assistant step of `scenario` replays `requests[i]`.
    pub requests: Vec<RecordedRequest>,
    /// The TTL most requests of this stream wrote with (from `cache_creation.ephemeral_*`).
    pub ttl: Option<Ttl>,
    /// Size of the leading block the first request read from an earlier session (tokens).
    pub shared_prefix: u64,
    /// Findings worth telling the user (model switches, shrinking prompts, mode repairs).
    pub notes: Vec<String>,
}

impl ImportedScenario {
    /// The scenario as a TOML file, with a header saying where it came from.
    pub fn to_toml(&self, source: &str) -> Result<String, String> {
        let body = toml::to_string(&self.scenario)
            .map_err(|e| format!("cannot write the scenario as TOML: {e}"))?;
        let mut head = format!(
            "# Imported by `plancache import` from {source} (stream {}).\n# Sizes are derived from the recorded usage (docs/validation.md explains how).\n",
            self.stream
        );
        if let Some(t) = self.ttl {
            head.push_str(&format!(
                "# Cache TTL written by the harness: {}\n",
                t.as_str()
            ));
        }
        for n in &self.notes {
            head.push_str(&format!("# note: {n}\n"));
        }
        Ok(head + &body)
    }
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
    let mut agent_static: Option<u64> = t
        .streams
        .iter()
        .filter(|s| s.kind == StreamKind::Agent)
        .filter_map(|s| s.requests().next())
        .map(|r| r.usage)
        .filter(|u| u.cache_read_input_tokens > 0 && u.cache_read_input_tokens < u.prompt_tokens())
        .map(|u| u.cache_read_input_tokens)
        .min();
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
        names.sort();
        names
    };
    let main_tools = tools_of(StreamKind::Main);
    let agent_tools = tools_of(StreamKind::Agent);
    let mut out = Vec::new();
    for s in &t.streams {
        if s.requests().next().is_none() {
            continue;
        }
        let (fixed, tools) = match s.kind {
            StreamKind::Main => (None, &main_tools),
            StreamKind::Agent => (agent_static, &agent_tools),
        };
        let b = build_stream(t, s, &tok, origin, fixed, tools, opts);
        if s.kind == StreamKind::Agent && agent_static.is_none() {
            agent_static = Some(b.static_tokens);
        }
        out.push(b.imported);
    }
    out
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
        tok.count(&TokenSource::Text(text.to_string())) as u64
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

fn clamp(n: u64) -> u32 {
    n.min(u32::MAX as u64) as u32
}

fn wait(ms: u64) -> Option<Step> {
    (ms > 0).then(|| Step::Wait(WaitDuration::new(std::time::Duration::from_millis(ms))))
}

fn is_write(name: &str) -> bool {
    DEFAULT_WRITE_TOOLS.contains(&name)
}

fn build_stream(
    t: &Transcript,
    s: &Stream,
    tok: &Tokenizer,
    origin: u64,
    fixed_static: Option<u64>,
    tool_names: &[String],
    opts: &ImportOptions,
) -> Built {
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
    let model = model_family(&first.model);
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
            Item::Mode { .. } | Item::Request(_) => String::new(),
        }
    };
    let carries_tokens = |i: &Item| !matches!(i, Item::Mode { .. });

    // The first prompt: static prefix + first messages.
    let p1 = first.usage.prompt_tokens();
    let pre_weights: Vec<u64> = pre
        .iter()
        .filter(|i| carries_tokens(i))
        .map(|i| weight(tok, &text_of(i)))
        .collect();
    let pre_sum: u64 = pre_weights.iter().sum();
    let static_tokens = fixed_static
        .unwrap_or_else(|| p1.saturating_sub(pre_sum))
        .min(p1);
    let pre_sizes = apportion(p1 - static_tokens, &pre_weights);
    let shared_prefix = match s.kind {
        StreamKind::Main => first.usage.cache_read_input_tokens.min(static_tokens),
        StreamKind::Agent => 0,
    };
    // Only the main stream is split at the block an earlier session wrote; subagents share one
    // static block among themselves.
    let system = if s.kind == StreamKind::Main && shared_prefix > 0 && shared_prefix < static_tokens
    {
        Blocks::Many(vec![
            Content::tokens(clamp(shared_prefix)),
            Content::tokens(clamp(static_tokens - shared_prefix)),
        ])
    } else {
        Blocks::One(Content::tokens(clamp(static_tokens)))
    };

    // What happened between consecutive requests, judged from the usage and the records.
    let boundaries: Vec<Boundary> = rounds
        .windows(2)
        .map(|w| {
            let (r, after) = (&w[0].0, &w[0].1);
            let next = w[1].0;
            let compacted = after.iter().any(|i| matches!(i, Item::Compaction { .. }));
            if compacted || next.usage.prompt_tokens() < r.usage.prompt_tokens() {
                Boundary::Compact
            } else {
                classify_break(r, next, static_tokens, opts).unwrap_or(Boundary::None)
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
                .any(|b| matches!(b, Boundary::EarlyEdit(_))) =>
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
    let mut sizes = pre_sizes.into_iter();
    for (j, i) in pre.iter().enumerate() {
        match i {
            Item::Mode { mode: m, .. } => {
                steps.push(Step::Mode(*m));
                mode = *m;
            }
            _ => {
                let n = sizes.next().unwrap_or(0);
                if !(context_tokens.is_some() && Some(j) == first_user) {
                    steps.push(user_tokens(n));
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
    let mut prev_sent = sent_at(first, &pre);
    let mut events_next: Vec<String> = Vec::new();
    let mut prev_first_at = first.first_at_ms;
    for (k, (r, after)) in rounds.iter().enumerate() {
        let sent = if k == 0 {
            prev_sent
        } else {
            sent_at(r, &rounds[k - 1].1)
        };
        if k > 0 {
            // From when the previous response began (the engine adds its own TTFT) to this send.
            steps.extend(wait(sent.saturating_sub(prev_first_at)));
        }
        prev_sent = sent;
        prev_first_at = r.first_at_ms;
        requests.push(RecordedRequest {
            request_id: r.request_id.clone(),
            line: r.line,
            model: r.model.clone(),
            usage: r.usage,
            sent_at_ms: sent.saturating_sub(origin),
            events: std::mem::take(&mut events_next),
        });

        let mut implicit_summary: Option<u64> = None;
        // What this reply and the items after it add to the next prompt.
        let reply_text: String = r
            .blocks
            .iter()
            .map(Block::visible_text)
            .collect::<Vec<_>>()
            .join("\n");
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
            Some((next, _)) => {
                let p_now = r.usage.prompt_tokens();
                let p_next = next.usage.prompt_tokens();
                let w: Vec<u64> = pieces.iter().map(|p| p.weight).collect();
                for (p, n) in pieces.iter_mut().zip(apportion(p_next - p_now, &w)) {
                    p.tokens = n;
                }
                let what = match &boundary {
                    Boundary::EarlyEdit(w) if context_tokens.is_some() => {
                        Some(format!("{w}; replayed as an `edit_context` step"))
                    }
                    Boundary::EarlyEdit(w) => Some(format!(
                        "{w}; no first user message to hold the block: not replayed"
                    )),
                    Boundary::ToolsChanged(w) => {
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
                        Step::Approve(Target::Enter)
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
                    if is_error {
                        // The machine reads the plan from the call; a rejection's result carries
                        // only the feedback, so the plan's size is its own token count.
                        call.plan_tokens = Some(clamp(weight(tok, input).max(1)));
                        plan_answer = Some(Step::Reject(TextOrContent::Content(Content::tokens(
                            clamp(size),
                        ))));
                    } else {
                        call.plan_tokens = Some(clamp(size));
                        plan_answer = Some(Step::Approve(Target::Exit));
                        mode = pre_plan;
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
            // Recorded reasoning (Codex): billed output that the next prompt does not repeat.
            reasoning_tokens: clamp(r.usage.reasoning_tokens),
            ..Turn::default()
        }));
        if let Some(a) = plan_answer {
            steps.push(a);
        }
        if trailing_after_answer > 0 {
            steps.push(user_tokens(trailing_after_answer));
        }
        // Everything not carried by a call, in order; mode switches where they happened.
        let mut piece_iter = pieces.iter().zip(answered.iter()).skip(1);
        for i in after {
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
                Item::Compaction { .. } => {
                    if let Some((p, _)) = piece_iter.next() {
                        steps.push(compact(p.tokens));
                    }
                }
                _ => {
                    if let Some((p, done)) = piece_iter.next() {
                        if !done && p.tokens > 0 {
                            steps.push(user_tokens(p.tokens));
                        }
                    }
                }
            }
        }
        if let Some(n) = implicit_summary {
            steps.push(compact(n));
        }
        match boundaries.get(k) {
            Some(Boundary::EarlyEdit(_)) if context_tokens.is_some() => {
                steps.push(Step::EditContext(ContextBlock {
                    name: CONTEXT_BLOCK.into(),
                    tokens: Some(clamp(context_size)),
                    ..ContextBlock::default()
                }));
            }
            Some(Boundary::ToolsChanged(_)) => {
                if let Some((next, _)) = rounds.get(k + 1) {
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

    let ttl = majority_ttl(rounds.iter().map(|(r, _)| r.usage.written_ttl()));
    let tools: Vec<ToolDef> = tool_names
        .iter()
        .map(|n| ToolDef {
            name: n.clone(),
            access: Some(if is_write(n) {
                Access::Write
            } else {
                Access::Read
            }),
            // The transcript does not record tool definitions: their size is part of the static
            // prefix, which the system blocks carry.
            tokens: Some(0),
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
            shared_prefix,
            notes,
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
        Boundary::EarlyEdit(format!(
            "early context block edited (the read stops at {read}, the end of the {static_tokens}-token static prefix, within the {} TTL)",
            ttl.as_str()
        ))
    } else {
        Boundary::ToolsChanged(format!(
            "tools or system prompt changed (the read stops at {read}, inside the {static_tokens}-token static prefix, within the {} TTL)",
            ttl.as_str()
        ))
    })
}

/// What happened between two consecutive requests of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Boundary {
    None,
    /// The conversation restarted from a summary (recorded, or the prompt shrank).
    Compact,
    /// An early context block changed (description).
    EarlyEdit(String),
    /// The tools or the system prompt changed (description).
    ToolsChanged(String),
}

/// Name of the context block an imported scenario declares for early-block edits.
pub const CONTEXT_BLOCK: &str = "early-context";

fn compact(tokens: u64) -> Step {
    // Claude Code does not log the summarisation request as an assistant record: replaying it
    // would add a request the transcript cannot be compared with.
    Step::Compact(Compact {
        summary_tokens: Some(clamp(tokens)),
        request: false,
        ..Compact::default()
    })
}

fn majority_ttl(ttls: impl Iterator<Item = Option<Ttl>>) -> Option<Ttl> {
    let (mut five, mut hour) = (0, 0);
    for t in ttls.flatten() {
        match t {
            Ttl::FiveMinutes => five += 1,
            Ttl::OneHour => hour += 1,
        }
    }
    match (five, hour) {
        (0, 0) => None,
        (f, h) if h > f => Some(Ttl::OneHour),
        _ => Some(Ttl::FiveMinutes),
    }
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
