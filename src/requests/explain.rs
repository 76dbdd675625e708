//! Replays a log's exact requests against the breakpoint cache model and says, for each, why
//! its read is what it is.
//!
//! Rules, in order (each names the first that applies):
//! 1. a pass the server ran after its own compaction (`usage.iterations`): nothing of the sent
//!    prefix is its prompt;
//! 2. the stream's first request (cold, or warm from before the log began);
//! 3. the model changed (caches are per model);
//! 4. the body changed before its end: in the tools, the system prompt or the messages, at the
//!    JSON path and offset of the first difference; the previous request's marks from there on
//!    are invalidated;
//! 5. otherwise the request only appends, and the read should reach the previous request's last
//!    mark. If it does not: the prefix is below the model's minimum; the TTL ran out (the gap
//!    since the previous request, which refreshed the entries, exceeds the marks' TTL); the
//!    lookback overran (the nearest mark past the previous entry is 20 or more blocks after it:
//!    a read checks the mark's block and walks back 20 blocks, the mark included — Anthropic,
//!    prompt-caching docs, "the system checks up to 20 blocks before each breakpoint"); the marks
//!    moved (no mark at or after the previous entry); and when none of these holds while the bill
//!    shows less than the replay: the server side (bodies identical up to the read, no rule
//!    explains the miss).

use serde::Serialize;

use super::build::{BuiltLog, BuiltRequest, Fit};
use super::diff::{diverge, Divergence};
use crate::cache::{self, CacheModel, PriceTable};
use crate::prompt::{Level, Ttl};

/// Read lookback in blocks, the breakpoint's own block included (rule A5 in docs/cache-models.md).
pub const LOOKBACK_BLOCKS: usize = 20;

/// Why a request read what it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Cause {
    /// The stream's first request.
    First {
        /// Whether its first read found the prefix already cached from before the log began.
        warm: bool,
    },
    /// A pass the server ran on its own compacted context.
    ServerCompaction,
    /// The model differs from the previous request's.
    ModelChanged {
        /// The previous request's model.
        from: String,
        /// This request's model.
        to: String,
    },
    /// A tool definition changed: `how` is `reordered`, `re-rendered: NAME`, `added: NAME`,
    /// `removed: NAME`.
    ToolsChanged {
        /// What changed, as above.
        how: String,
    },
    /// A system block changed.
    SystemChanged,
    /// An earlier message changed (history edited, cleared or rewound).
    MessagesChanged,
    /// The entries' TTL ran out: `gap_ms` since the previous request, `ttl_ms` the marks' TTL.
    TtlExpired {
        /// Milliseconds since the previous request.
        gap_ms: u64,
        /// The marks' TTL in milliseconds.
        ttl_ms: u64,
    },
    /// The nearest mark past the previous entry lies `blocks` blocks after it.
    LookbackOverrun {
        /// The mark's place in the body.
        mark: String,
        /// How many blocks past the previous entry it lies.
        blocks: usize,
    },
    /// The prefix through the last mark is shorter than the model's minimum.
    BelowMinimum {
        /// Prompt tokens through the last mark.
        prefix: u64,
        /// The model's minimum cacheable prefix.
        min: u64,
    },
    /// No mark at or after the previous request's last entry.
    MarksMoved,
    /// Bodies identical up to the billed read, no rule explains it: the provider's side.
    ServerSide,
    /// The read is what the previous request left.
    None,
}

impl Cause {
    /// Short name for tables: `tools changed`, `ttl expired`, ...
    pub fn name(&self) -> &'static str {
        match self {
            Cause::First { warm: false } => "first request (cold)",
            Cause::First { warm: true } => "first request (warm before the log)",
            Cause::ServerCompaction => "server-side compaction",
            Cause::ModelChanged { .. } => "model changed",
            Cause::ToolsChanged { .. } => "tools changed",
            Cause::SystemChanged => "system changed",
            Cause::MessagesChanged => "messages changed",
            Cause::TtlExpired { .. } => "ttl expired",
            Cause::LookbackOverrun { .. } => "lookback overrun",
            Cause::BelowMinimum { .. } => "below minimum",
            Cause::MarksMoved => "marks moved",
            Cause::ServerSide => "server side",
            Cause::None => "-",
        }
    }
}

/// One request's explanation.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainRow {
    /// 0-based position in send order.
    pub index: usize,
    /// Where it sits in the log.
    pub place: String,
    /// The request's stream (`main` or a subagent's).
    pub stream: String,
    /// The model the request names.
    pub model: String,
    /// Send time, ms since the log's first request.
    pub at_ms: u64,
    /// Prompt tokens of the rebuilt request.
    pub prompt: u64,
    /// Billed cache read and write (none when the response has no usage).
    pub billed_read: Option<u64>,
    /// Billed cache write tokens (none when the response has no usage).
    pub billed_write: Option<u64>,
    /// The replay's read and write.
    pub predicted_read: u64,
    /// The replay's cache write tokens.
    pub predicted_write: u64,
    /// First difference from the previous request of the stream (`system[2].text@118`), when
    /// the body changed before its end.
    pub diverges_at: Option<String>,
    /// The previous request's marks the change invalidates (`system[0] (1h)`).
    pub invalidated: Vec<String>,
    /// Why the predicted read is what it is.
    pub cause: Cause,
    /// The cause in words, with its figures.
    pub detail: String,
    /// The provider's own verdict, when the response carries one.
    pub verdict: Option<String>,
    /// A break: the read is below half the previous request's prompt (billed figures when
    /// there are any).
    pub is_break: bool,
    /// How the token lengths were fitted to the bill.
    pub fit: Fit,
}

fn marks(r: &BuiltRequest) -> Vec<(usize, Ttl)> {
    r.request
        .segments
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.breakpoint.map(|t| (i, t)))
        .collect()
}

fn end_of(r: &BuiltRequest, piece: usize) -> u64 {
    r.request.segments[..=piece]
        .iter()
        .map(|s| s.len() as u64)
        .sum()
}

fn fmt_ms(ms: u64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(ms / 1000)).to_string()
}

/// The cache model of the exact replay: the breakpoint model with the log's own marks when
/// the log states any, else the OpenAI-style prefix cache.
pub fn exact_cache_name(log: &BuiltLog) -> &'static str {
    if log.requests.iter().any(|r| !marks(r).is_empty()) {
        "anthropic-explicit"
    } else {
        "openai"
    }
}

/// Replays the requests (a warm start first writes the prefix the first read found).
fn replay(log: &BuiltLog, prices: &PriceTable) -> Vec<cache::CacheOutcome> {
    let mut prices = prices.clone();
    prices.pin(log.requests.iter().map(|r| r.request.model.as_str()));
    let mut c = cache::build(exact_cache_name(log), &prices).expect("bundled cache model");
    replay_on(log, c.as_mut())
}

/// Replays every request of the log, in send order and as sent, against `c` (shared by all
/// streams, as the provider's cache is); one outcome per request.
pub fn replay_on(log: &BuiltLog, c: &mut dyn CacheModel) -> Vec<cache::CacheOutcome> {
    const SHIFT: u64 = 1000;
    let mut out = Vec::with_capacity(log.requests.len());
    for r in &log.requests {
        let mut req = r.request.clone();
        req.sent_at_ms += SHIFT;
        if r.warm_start {
            warm(c, &req, r.usage.as_ref().map_or(0, |u| u.read));
        }
        let o = c.lookup(&req);
        let visible = req.sent_at_ms + r.ttfb_ms.unwrap_or(1).max(1);
        c.store(&req, &o, visible, visible);
        out.push(o);
    }
    out
}

/// Writes the prefix a warm first request found: the request cut after the last segment that
/// ends at or before `read`, with a mark there, sent just before it.
fn warm(c: &mut dyn CacheModel, req: &crate::prompt::Request, read: u64) {
    let mut end = 0u64;
    let mut keep = 0usize;
    for (i, s) in req.segments.iter().enumerate() {
        end += s.len() as u64;
        if end > read {
            break;
        }
        keep = i + 1;
    }
    if keep == 0 {
        return;
    }
    let mut w = req.clone();
    w.segments.truncate(keep);
    w.stream = format!("{} (before the log)", req.stream);
    w.sent_at_ms = req.sent_at_ms - 1;
    if let Some(last) = w.segments.last_mut() {
        if last.breakpoint.is_none() {
            let mut s = (**last).clone();
            s.breakpoint = Some(Ttl::FiveMinutes);
            *last = std::sync::Arc::new(s);
        }
    }
    let o = c.lookup(&w);
    c.store(&w, &o, w.sent_at_ms, w.sent_at_ms);
}

/// How the tools changed between two bodies.
fn tools_how(prev: &BuiltRequest, cur: &BuiltRequest, d: &Divergence) -> String {
    let names = |r: &BuiltRequest| -> Vec<String> {
        r.body
            .iter()
            .flat_map(|b| b.pieces.iter())
            .filter(|p| p.level == Level::Tools)
            .map(|p| p.name.clone().unwrap_or_default())
            .collect()
    };
    let (a, b) = (names(prev), names(cur));
    let (mut sa, mut sb) = (a.clone(), b.clone());
    sa.sort();
    sb.sort();
    if sa == sb && a != b {
        let moved = a
            .iter()
            .zip(&b)
            .find(|(x, y)| x != y)
            .map(|(_, y)| y.clone())
            .unwrap_or_default();
        return format!(
            "reordered ({moved} moved to tools[{}])",
            b.iter().position(|n| *n == moved).unwrap_or(0)
        );
    }
    if let Some(n) = b.iter().find(|n| !a.contains(n)) {
        return format!("added: {n}");
    }
    if let Some(n) = a.iter().find(|n| !b.contains(n)) {
        return format!("removed: {n}");
    }
    format!(
        "re-rendered: {}",
        b.get(d.piece).cloned().unwrap_or_default()
    )
}

/// The cause of a request whose body changed before its end.
fn changed(prev: &BuiltRequest, cur: &BuiltRequest, d: &Divergence) -> (Cause, String) {
    let level = cur
        .request
        .segments
        .get(d.piece)
        .or_else(|| prev.request.segments.get(d.piece))
        .map_or(Level::Messages, |s| s.level);
    match level {
        Level::Tools => {
            let how = tools_how(prev, cur, d);
            let detail = format!("tools {how}; first difference at {}", d.at);
            (Cause::ToolsChanged { how }, detail)
        }
        Level::System => (
            Cause::SystemChanged,
            format!("system prompt changed at {}", d.at),
        ),
        Level::Messages => (
            Cause::MessagesChanged,
            format!("an earlier message changed at {}", d.at),
        ),
    }
}

/// The cause of an append-only request whose read fell short of the previous entry.
fn appended(
    prev: &BuiltRequest,
    cur: &BuiltRequest,
    read: u64,
    predicted: u64,
    min: u64,
) -> (Cause, String) {
    let pm = marks(prev);
    let cm = marks(cur);
    if let Some(&(last, _)) = cm.last() {
        let prefix = end_of(cur, last);
        if prefix < min {
            return (Cause::BelowMinimum { prefix, min }, format!("the prefix through the last mark is {prefix} tokens, below the model's minimum of {min}"));
        }
    }
    let Some(&(e, last_ttl)) = pm.last() else {
        return (
            Cause::MarksMoved,
            "the previous request had no mark, so it wrote nothing to read".into(),
        );
    };
    // The deepest entry (at the previous request's last mark) lives for its mark's TTL.
    let ttl = last_ttl.millis();
    let gap = cur
        .request
        .sent_at_ms
        .saturating_sub(prev.request.sent_at_ms);
    if gap > ttl {
        return (
            Cause::TtlExpired {
                gap_ms: gap,
                ttl_ms: ttl,
            },
            format!(
                "{} since the previous request: {} past the {} TTL",
                fmt_ms(gap),
                fmt_ms(gap - ttl),
                fmt_ms(ttl)
            ),
        );
    }
    match cm.iter().find(|m| m.0 >= e) {
        None => (Cause::MarksMoved, format!("no mark at or after the previous entry at {}", prev.request.segments[e].label)),
        Some(&(m, _)) if m - e >= LOOKBACK_BLOCKS => (
            Cause::LookbackOverrun { mark: cur.request.segments[m].label.clone(), blocks: m - e },
            format!(
                "the mark on {} is {} blocks past the last entry at {}; a read looks back {LOOKBACK_BLOCKS} blocks",
                cur.request.segments[m].label,
                m - e,
                prev.request.segments[e].label
            ),
        ),
        Some(_) if read < predicted => (
            Cause::ServerSide,
            format!("bodies identical up to the billed read ({read} tokens) and no rule explains it: the replay reads {predicted}; the miss is on the server side"),
        ),
        Some(_) => (Cause::None, String::new()),
    }
}

/// Explains every request of a log.
pub fn explain_log(log: &BuiltLog, prices: &PriceTable) -> Vec<ExplainRow> {
    let outcomes = replay(log, prices);
    let mut rows = Vec::with_capacity(log.requests.len());
    for (i, (r, o)) in log.requests.iter().zip(&outcomes).enumerate() {
        let prev = log.requests[..i]
            .iter()
            .rposition(|p| p.request.stream == r.request.stream && p.body.is_some());
        let prev_any = log.requests[..i]
            .iter()
            .rposition(|p| p.request.stream == r.request.stream);
        let billed_read = r.usage.as_ref().map(|u| u.read);
        let read = billed_read.unwrap_or(o.cached_tokens);
        let min = prices.get(&r.request.model).map_or(0, |p| p.min_cacheable);
        let mut diverges_at = None;
        let mut invalidated = Vec::new();
        let (cause, detail) = match prev.map(|p| &log.requests[p]) {
            _ if r.server_compaction => (
                Cause::ServerCompaction,
                "the server compacted the context (context_management) and ran this pass on its summary: none of the sent prefix is its prompt".to_string(),
            ),
            None => {
                let warm = r.warm_start;
                let small = marks(r).last().map(|&(k, _)| end_of(r, k)).filter(|&p| p < min);
                let detail = match (warm, small) {
                    (true, _) => format!("{read} tokens were cached before the log began"),
                    (false, Some(p)) => format!("cold; the prefix through the last mark is {p} tokens, below the model's minimum of {min}: nothing is written"),
                    (false, None) => String::new(),
                };
                (Cause::First { warm }, detail)
            }
            Some(p) if p.request.model != r.request.model => (
                Cause::ModelChanged { from: p.request.model.clone(), to: r.request.model.clone() },
                format!("{} -> {}: caches are per model", p.request.model, r.request.model),
            ),
            Some(p) => {
                let (pb, cb) = (p.body.as_ref().expect("prev has a body"), r.body.as_ref());
                match cb.and_then(|b| diverge(&pb.pieces, &b.pieces)) {
                    Some(d) if !d.appended => {
                        invalidated = marks(p)
                            .into_iter()
                            .filter(|m| m.0 >= d.piece)
                            .map(|(k, t)| format!("{} ({})", p.request.segments[k].label, t.as_str()))
                            .collect();
                        let c = changed(p, r, &d);
                        diverges_at = Some(d.at);
                        c
                    }
                    _ => {
                        let reusable = marks(p).last().map_or(0, |&(e, _)| end_of(p, e));
                        if read < reusable || (reusable == 0 && o.cached_tokens == 0 && !marks(r).is_empty()) {
                            let (c, d) = appended(p, r, read, o.cached_tokens, min);
                            if let Cause::TtlExpired { gap_ms, .. } = c {
                                invalidated = marks(p).into_iter().filter(|m| m.1.millis() < gap_ms).map(|(k, t)| format!("{} ({})", p.request.segments[k].label, t.as_str())).collect();
                            }
                            (c, d)
                        } else {
                            (Cause::None, String::new())
                        }
                    }
                }
            }
        };
        let prev_prompt = prev_any.map(|p| {
            let q = &log.requests[p];
            q.usage
                .as_ref()
                .map_or(q.request.prompt_tokens(), |u| u.prompt())
        });
        rows.push(ExplainRow {
            index: i,
            place: r.place.clone(),
            stream: r.request.stream.clone(),
            model: r.request.model.clone(),
            at_ms: r.request.sent_at_ms,
            prompt: r.request.prompt_tokens(),
            billed_read,
            billed_write: r.usage.as_ref().map(|u| u.creation),
            predicted_read: o.cached_tokens,
            predicted_write: o.cache_write_tokens(),
            diverges_at,
            invalidated,
            detail: if detail.is_empty() {
                cause.name().to_string()
            } else {
                detail
            },
            cause,
            verdict: r.verdict.clone(),
            is_break: prev_prompt.is_some_and(|pp| read * 2 < pp),
            fit: r.fit.clone(),
        });
    }
    rows
}
