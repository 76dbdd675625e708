//! From a block-hash trace to scenarios: one per stream (the main conversation and each
//! subagent), so `run`, `report` and every strategy replay real agent traffic.
//!
//! A trace gives, per request, its prompt as hash blocks and its sizes, not its content. The
//! scenario keeps what a cache can see:
//! - the static prefix: `tool_tokens` split over Claude Code's built-in tools by their published
//!   sizes (the rest as one `OtherTools` definition), then one system block of `system_tokens`,
//!   so toolset-swap and system-swap re-render the real sizes;
//! - the conversation: request k shares its first `shared_k` hash blocks with request k-1. When
//!   it shares all of them, the prompt grew: the previous reply is kept and the rest of the
//!   growth is one user message (`out` counts thinking, which later prompts do not repeat, so
//!   the visible reply is at most what the prompt grew by; the rest is reasoning). When it shares fewer, the conversation was rewritten at
//!   block `shared_k` (a compaction, a cleared tool result): a `compact` step that sends no
//!   request keeps the whole messages before that point and the new content follows.
//!   Appended content is split into messages at every block position a later request breaks
//!   at, so each such break keeps exactly the blocks the trace shares;
//! - the clock: a `wait` before each request brings the replay's clock to its recorded `t`
//!   (timing defaults are zero, replies take no time on the scenario clock).
//!
//! Count-only content gets synthetic tokens per step, so distinct hashes are distinct tokens and
//! shared blocks are the same tokens carried over: equal hashes are equal prefixes.

use std::collections::BTreeSet;
use std::time::Duration;

use super::{Trace, TraceStream};
use crate::import::tool_sizes;
use crate::plan_mode::Mode;
use crate::scenario::{
    Blocks, Compact, Content, Reminders, Scenario, Step, TextOrContent, Timing, ToolDef, Turn,
    WaitDuration,
};

/// One stream's scenario, with the notes its header carries.
#[derive(Debug, Clone)]
pub struct TraceScenario {
    /// The stream's name (`main` or the subagent's id).
    pub stream: String,
    /// The scenario replaying it.
    pub scenario: Scenario,
    /// Findings worth telling the user (requests that break inside the static prefix, ...).
    pub notes: Vec<String>,
}

impl TraceScenario {
    /// The scenario as TOML with a header saying where it came from.
    pub fn to_toml(&self, trace: &Trace) -> Result<String, crate::import::ImportError> {
        let body = toml::to_string(&self.scenario)?;
        let mut head = format!(
            "# Imported by `plancache import trace` from {} (stream {}, {} requests, {}-token hash blocks).\n# Messages are sized so that each request shares the recorded leading hash blocks with the previous one (docs/workloads.md).\n",
            crate::import::scenario::comment_safe(&trace.file.display().to_string()),
            crate::import::scenario::comment_safe(&self.stream),
            self.scenario.steps.iter().filter(|s| matches!(s, Step::Assistant(_))).count(),
            trace.block_size
        );
        for n in &self.notes {
            head.push_str(&format!(
                "# note: {}\n",
                crate::import::scenario::comment_safe(n)
            ));
        }
        Ok(head + &body)
    }
}

/// Every stream of `trace` as a scenario, main first.
pub fn scenarios(trace: &Trace) -> Vec<TraceScenario> {
    trace
        .streams
        .iter()
        .filter(|s| !s.requests.is_empty())
        .map(|s| stream_scenario(trace, s))
        .collect()
}

/// The model most requests of the stream name (ties: the first); a default when none is named.
fn majority_model(s: &TraceStream) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in s.requests.iter().filter(|r| !r.model.is_empty()) {
        match counts.iter_mut().find(|(m, _)| *m == r.model) {
            Some((_, n)) => *n += 1,
            None => counts.push((&r.model, 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
    counts
        .iter()
        .find(|(_, n)| *n == best)
        .map(|(m, _)| m.to_string())
        .unwrap_or_else(|| DEFAULT_MODEL.to_string())
}

/// Model of a trace that names none (Mooncake): the one the bundled scenarios use.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The static prefix: Claude Code's built-in tools sized by their published descriptions within
/// `tool_tokens` (the rest in `OtherTools`), then the system prompt.
fn static_prefix(tool_tokens: u64, system_tokens: u64) -> (Vec<ToolDef>, Blocks) {
    let names: Vec<String> = tool_sizes::BUILT_IN.iter().map(|s| s.to_string()).collect();
    let sizes = tool_sizes::sized(&names, tool_tokens);
    let mut tools: Vec<ToolDef> = names
        .into_iter()
        .zip(&sizes)
        .filter(|(_, &n)| n > 0)
        .map(|(name, &n)| tool(name, n as u64))
        .collect();
    let rest = tool_tokens - sizes.iter().map(|&n| n as u64).sum::<u64>();
    if rest > 0 {
        tools.push(tool("OtherTools".into(), rest));
    }
    (tools, Blocks::One(Content::tokens(clamp(system_tokens))))
}

fn tool(name: String, tokens: u64) -> ToolDef {
    ToolDef {
        name,
        access: None,
        tokens: Some(clamp(tokens)),
        description: None,
        schema: None,
        deferred: false,
        cache_control: None,
    }
}

fn clamp(n: u64) -> u32 {
    n.min(u32::MAX as u64) as u32
}

/// Leading hash ids `b` shares with `a`.
fn shared(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// `next` shares every hash block of `prev`.
fn continues(prev: &[u64], next: &[u64]) -> bool {
    next.len() >= prev.len() && next[..prev.len()] == *prev
}

/// The messages of the conversation being rebuilt, and the steps that build it.
struct Builder {
    /// Size of each message of the conversation, in order.
    msgs: Vec<u64>,
    /// Message positions (tokens after the static prefix) where some request breaks.
    cuts: BTreeSet<u64>,
    steps: Vec<Step>,
}

impl Builder {
    fn total(&self) -> u64 {
        self.msgs.iter().sum()
    }

    /// The pieces of `n` new tokens appended at the conversation's end, split at the cuts.
    fn pieces(&self, n: u64) -> Vec<u64> {
        let start = self.total();
        let mut at = start;
        let mut out = Vec::new();
        if n == 0 {
            return out;
        }
        for &c in self.cuts.range(start + 1..start + n) {
            out.push(c - at);
            at = c;
        }
        if start + n > at {
            out.push(start + n - at);
        }
        out
    }

    /// Appends `n` tokens of user content.
    fn append(&mut self, n: u64) {
        for p in self.pieces(n) {
            self.steps
                .push(Step::User(TextOrContent::Content(Content::tokens(clamp(
                    p,
                )))));
            self.msgs.push(p);
        }
    }

    /// Keeps the whole messages within `keep` tokens, then new content up to `total`: the first
    /// piece as the compaction's summary (no request of its own), the others as user messages.
    fn rewrite(&mut self, keep: u64, total: u64) {
        let mut kept = 0;
        let mut n = 0;
        for &m in &self.msgs {
            if kept + m > keep.min(total) {
                break;
            }
            kept += m;
            n += 1;
        }
        self.msgs.truncate(n);
        let pieces = self.pieces(total - kept);
        let first = pieces.first().copied().unwrap_or(0);
        self.steps.push(Step::Compact(Compact {
            summary_tokens: Some(clamp(first)),
            keep_tokens: Some(clamp(kept)),
            request: false,
            ..Compact::default()
        }));
        self.msgs.push(first);
        for &p in pieces.iter().skip(1) {
            self.steps
                .push(Step::User(TextOrContent::Content(Content::tokens(clamp(
                    p,
                )))));
            self.msgs.push(p);
        }
    }

    fn wait(&mut self, ms: u64) {
        if ms > 0 {
            self.steps
                .push(Step::Wait(WaitDuration::new(Duration::from_millis(ms))));
        }
    }
}

fn stream_scenario(trace: &Trace, s: &TraceStream) -> TraceScenario {
    let bs = trace.block_size;
    let mut notes = Vec::new();
    let first_in = s.requests[0].input_tokens;
    // A static prefix larger than the first prompt cannot be: the system block gives way first.
    let tool_tokens = s.tool_tokens.min(first_in);
    let system_tokens = s.system_tokens.min(first_in - tool_tokens);
    if tool_tokens + system_tokens < s.tool_tokens + s.system_tokens {
        notes.push(format!(
            "the header's static prefix ({} tokens) exceeds the first prompt ({first_in}); cut to fit",
            s.tool_tokens + s.system_tokens
        ));
    }
    let stat = tool_tokens + system_tokens;
    let cuts = s
        .requests
        .windows(2)
        .map(|w| shared(&w[0].hash_ids, &w[1].hash_ids) as u64 * bs)
        .filter(|&p| p > stat)
        .map(|p| p - stat)
        .collect();
    let mut b = Builder {
        msgs: Vec::new(),
        cuts,
        steps: Vec::new(),
    };
    let model = majority_model(s);
    let mut prev: Option<&super::TraceRequest> = None;
    for (k, r) in s.requests.iter().enumerate() {
        b.wait(r.sent_at_ms - prev.map_or(0, |p| p.sent_at_ms.min(r.sent_at_ms)));
        let target = r.input_tokens.saturating_sub(stat);
        match prev {
            None => b.append(target),
            Some(p) => {
                let n = shared(&p.hash_ids, &r.hash_ids);
                if (n as u64) < stat / bs {
                    notes.push(format!(
                        "request {k}: shares {} tokens with the previous one, less than the static prefix ({stat}); replayed as a conversation rewrite",
                        n as u64 * bs
                    ));
                }
                if n == p.hash_ids.len() && b.total() <= target {
                    let grow = target - b.total();
                    b.append(grow);
                } else {
                    b.rewrite((n as u64 * bs).saturating_sub(stat), target);
                }
            }
        }
        // `out` counts thinking too, which the next prompt does not repeat: when the next request
        // continues this prompt, the visible reply is at most what the prompt grew by.
        let visible = match s.requests.get(k + 1) {
            Some(nx) if continues(&r.hash_ids, &nx.hash_ids) => r
                .output_tokens
                .min(nx.input_tokens.saturating_sub(r.input_tokens)),
            _ => r.output_tokens,
        };
        b.steps.push(Step::Assistant(Turn {
            tokens: Some(clamp(visible)),
            text: None,
            reasoning_tokens: clamp(r.output_tokens - visible),
            model: (!r.model.is_empty() && r.model != model).then(|| r.model.clone()),
            calls: Vec::new(),
            unlogged: false,
        }));
        b.msgs.push(visible);
        prev = Some(r);
    }
    let (tools, system) = static_prefix(tool_tokens, system_tokens);
    let name = if s.name == "main" {
        trace.id.clone()
    } else {
        format!("{}.{}", trace.id, s.name)
    };
    TraceScenario {
        stream: s.name.clone(),
        scenario: build(name, trace, model, tools, system, b.steps),
        notes,
    }
}

fn build(
    name: String,
    trace: &Trace,
    model: String,
    tools: Vec<ToolDef>,
    system: Blocks,
    steps: Vec<Step>,
) -> Scenario {
    let zero = Content::tokens(0);
    Scenario {
        name,
        description: format!("block-hash trace {}", trace.id),
        model,
        plan_model: None,
        ttl: None,
        keepalive_max_tokens: 1,
        tokenizer: Default::default(),
        seed: 0,
        initial_mode: Mode::Default,
        auto_available: true,
        external_channels: false,
        plans_dir: "plans".into(),
        system,
        plan_system: None,
        tools,
        // The recorded sizes hold everything the harness appended: no reminders of our own.
        reminders: Reminders {
            plan_enter: zero.clone(),
            plan_exit: zero.clone(),
            denied: zero.clone(),
            enter_approved: zero.clone(),
            enter_declined: zero,
            plan_approved_header: 0,
            plan_rejected_header: 0,
        },
        team: None,
        // Time comes from the recorded `t` (wait steps), not from defaults.
        timing: Timing::recorded(),
        context: Vec::new(),
        deferred_tools: Default::default(),
        steps,
    }
}
