//! What the charts and the report draw, computed from a run: groups of replays, the cost split,
//! the mode timeline and the cache breaks.

use super::ChartError;
use crate::cache::{BreakReason, PriceTable};
use crate::engine::{Replay, RunReport};
use crate::metrics::RequestRow;
use crate::plan_mode::{Mode, Trace};
use crate::prompt::Level;

/// The replays of one scenario against one cache model: one line or bar per strategy.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The cache model (a registry name).
    pub cache: &'a str,
    /// One replay per strategy, in run order.
    pub replays: Vec<&'a Replay>,
}

impl Group<'_> {
    /// File-name stem for this group's charts, e.g. `auth-plan-anthropic`.
    pub fn stem(&self) -> String {
        format!("{}-{}", slug(self.scenario), slug(self.cache))
    }
    /// The number of requests (the same under every strategy: one per assistant step).
    pub fn requests(&self) -> usize {
        self.replays.iter().map(|r| r.rows.len()).max().unwrap_or(0)
    }
}

pub use crate::util::slug;

/// Groups a run's replays by scenario and cache model, in run order.
pub fn groups(report: &RunReport) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for r in &report.replays {
        match out
            .iter_mut()
            .find(|g| g.scenario == r.scenario && g.cache == r.cache)
        {
            Some(g) => g.replays.push(r),
            None => out.push(Group {
                scenario: &r.scenario,
                cache: &r.cache,
                replays: vec![r],
            }),
        }
    }
    out
}

/// A session's cost in USD split the way the provider bills it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostSplit {
    /// Prompt tokens neither read from nor written to the cache, at the base input price.
    pub uncached_input: f64,
    /// Cache writes of the 5-minute class (Anthropic), or every write of a cache model whose
    /// writes have no TTL class (then named "cache writes").
    pub write_5m: f64,
    /// Cache writes of the 1-hour class (Anthropic).
    pub write_1h: f64,
    /// Cached prompt tokens, at the read price.
    pub read: f64,
    /// Output tokens, at the output price.
    pub output: f64,
    /// Explicit cache storage (Gemini `cachedContents`, per token-hour).
    pub storage: f64,
    /// Whether the cache model bills writes in TTL classes (5 m / 1 h): Anthropic's do; other
    /// providers' writes (Gemini explicit objects, OpenAI, self-hosted engines) have none.
    pub ttl_classes: bool,
}

impl CostSplit {
    /// Number of parts, in drawing order.
    pub const N: usize = 6;

    /// Names of the parts, in drawing order, for this split's cache model.
    pub fn names(&self) -> [&'static str; Self::N] {
        [
            "uncached input",
            if self.ttl_classes {
                "cache writes 5m"
            } else {
                "cache writes"
            },
            "cache writes 1h",
            "cache reads",
            "output",
            "cache storage",
        ]
    }

    /// The parts' dollar amounts, in the order of [`CostSplit::names`].
    pub fn parts(&self) -> [f64; Self::N] {
        [
            self.uncached_input,
            self.write_5m,
            self.write_1h,
            self.read,
            self.output,
            self.storage,
        ]
    }
    /// The prompt's cost: uncached input, cache writes and cache reads (output and storage
    /// excluded).
    pub fn prompt(&self) -> f64 {
        self.uncached_input + self.write_5m + self.write_1h + self.read
    }
    /// What the session costs in all: `cost_usd` summed over its rows, pings and compaction
    /// requests included (`cost $` plus `ping $` and `compaction $` of `run`).
    pub fn total(&self) -> f64 {
        self.prompt() + self.output + self.storage
    }
}

/// Whether a cache model bills writes in 5-minute and 1-hour classes: Anthropic's API and
/// Bedrock (Anthropic models, the same classes). Elsewhere a write has no class to name.
pub fn has_ttl_classes(cache: &str) -> bool {
    cache.starts_with("anthropic") || cache == "bedrock"
}

/// Splits the cost of `rows` with the same prices `ModelPrice::cost_billed` used, so the parts add
/// up to the rows' `cost_usd`. Caches whose provider charges nothing extra for writes bill written
/// tokens at the base input price; they still show as writes. Storage (the one term of the
/// bill the rows carry no tokens for) is what remains of `cost_usd` after the other parts.
pub fn cost_split(rows: &[RequestRow], prices: &PriceTable) -> Result<CostSplit, ChartError> {
    let mut s = CostSplit {
        ttl_classes: rows.first().is_none_or(|r| has_ttl_classes(&r.cache)),
        ..CostSplit::default()
    };
    let mut charges: Vec<(String, bool)> = Vec::new();
    let mut billed = 0.0;
    for r in rows {
        let charged = match charges.iter().find(|(n, _)| *n == r.cache) {
            Some((_, c)) => *c,
            None => {
                let c = crate::cache::build(&r.cache, prices)?.charges_writes();
                charges.push((r.cache.to_string(), c));
                c
            }
        };
        let (w5, w1) = match prices.get(&r.model) {
            Some(p) if charged => (p.write_5m, p.write_1h),
            _ => (1.0, 1.0),
        };
        let p = prices.get(&r.model).ok_or_else(|| ChartError::Unpriced {
            model: r.model.to_string(),
            request: r.request,
            scenario: r.scenario.to_string(),
            strategy: r.strategy.to_string(),
        })?;
        let per_token = p.input / 1_000_000.0;
        let plain = r.recomputed_tokens.saturating_sub(r.cache_write_tokens);
        s.uncached_input += plain as f64 * per_token;
        s.write_5m += r.cache_creation_5m_tokens as f64 * per_token * w5;
        s.write_1h += r.cache_creation_1h_tokens as f64 * per_token * w1;
        s.read += r.cached_tokens as f64 * per_token * p.read;
        s.output += r.output_tokens as f64 * p.output / 1_000_000.0;
        billed += r.cost_usd;
    }
    // Rounding noise of the sums is not storage.
    let rest = billed - (s.prompt() + s.output);
    if rest > 1e-9 {
        s.storage = rest;
    }
    Ok(s)
}

/// Running sum of recomputed tokens, one value per request.
pub fn cumulative_recomputed(rows: &[RequestRow]) -> Vec<u64> {
    rows.iter()
        .scan(0u64, |acc, r| {
            *acc += r.recomputed_tokens;
            Some(*acc)
        })
        .collect()
}

/// The phase a request runs in, for the timeline under per-request charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// A non-plan mode before any plan was approved.
    Before(Mode),
    /// Plan mode.
    Plan,
    /// A non-plan mode after plan mode was left.
    After(Mode),
}

impl Phase {
    /// The phase's name on the timeline (`plan`, `after approval (acceptEdits)`).
    pub fn label(self) -> String {
        match self {
            Phase::Before(m) => m.to_string(),
            Phase::Plan => "plan".to_string(),
            Phase::After(Mode::Default) => "after approval".to_string(),
            Phase::After(m) => format!("after approval ({m})"),
        }
    }
}

/// A decision worth marking on the timeline: approvals, rejections, waits, mode switches.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Position on the request axis: `k + 0.5` lies between requests `k` and `k + 1`.
    pub x: f64,
    /// What happened (`plan approved`, `rejected`, a wait with its pings, `default -> plan`, ...).
    pub label: String,
}

/// The mode timeline of a replay: the phase and stream of each request (in send order, subagent
/// requests included) and the events between requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The phase of each request, in send order.
    pub phases: Vec<Phase>,
    /// Request stream per request: `main` or a subagent's name.
    pub streams: Vec<String>,
    /// The decisions between requests, in order.
    pub events: Vec<Event>,
}

/// Builds the timeline from the reference machine's trace (identical under every strategy) and
/// the rows' steps and modes.
pub fn timeline(rows: &[RequestRow], trace: &Trace) -> Timeline {
    let all: Vec<&RequestRow> = rows.iter().collect();
    let mut left_plan_at: Option<usize> = None;
    for e in &trace.entries {
        if e.mode_before == Mode::Plan && e.mode_after != Mode::Plan {
            left_plan_at = Some(e.step);
            break;
        }
    }
    let phases = all
        .iter()
        .map(|r| {
            let m = r.mode;
            match (m, left_plan_at) {
                (Mode::Plan, _) => Phase::Plan,
                (m, Some(step)) if r.step > step => Phase::After(m),
                (m, _) => Phase::Before(m),
            }
        })
        .collect();
    let mut events = Vec::new();
    for e in trace.entries.iter().filter(|e| e.stream == "main") {
        let wait = e.event.starts_with("wait");
        let label = if wait {
            // Keep-alive pings are requests of the wait's step: the marker precedes them.
            match rows
                .iter()
                .filter(|r| r.step == e.step && r.kind == crate::metrics::RequestKind::Keepalive)
                .count()
            {
                0 => e.event.clone(),
                1 => format!("{} + 1 ping", e.event),
                n => format!("{} + {n} pings", e.event),
            }
        } else if e.event.starts_with("reject") {
            "rejected".to_string()
        } else if e.event.starts_with("decline") {
            "declined".to_string()
        } else if e.event == "approve enter" {
            "enter plan".to_string()
        } else if e.event == "approve exit" || e.event.starts_with("edit plan") {
            "plan approved".to_string()
        } else if e.event.starts_with("edit system") {
            "system prompt edited".to_string()
        } else if e.event.starts_with("edit context") {
            "context edited".to_string()
        } else if e.event == "compact" {
            "compacted".to_string()
        } else if e.event.starts_with("lead") || e.event.starts_with("mode") {
            e.event.clone()
        } else if e.mode_before != e.mode_after {
            format!("{} -> {}", e.mode_before, e.mode_after)
        } else {
            continue;
        };
        let before = all
            .iter()
            .filter(|r| r.step < e.step || (r.step == e.step && !wait))
            .count();
        events.push(Event {
            x: before as f64 + 0.5,
            label,
        });
    }
    Timeline {
        phases,
        streams: rows.iter().map(|r| r.stream.to_string()).collect(),
        events,
    }
}

/// A cache break of one request, in words.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Break {
    /// The request's number (1-based, as in `requests.csv`).
    pub request: usize,
    /// The scenario step that sent it (1-based).
    pub step: usize,
    /// `tools`, `system` or `messages` (empty when the reason names no level).
    pub level: String,
    /// The cache model's reason: `prefix changed`, `ttl expired`, ...
    pub reason: String,
    /// The segment where reuse stopped, e.g. `tool:EnterPlanMode`.
    pub segment: String,
    /// A short label for chart markers.
    pub short: String,
    /// Why, in plain language.
    pub because: String,
    /// Prompt tokens the break made the request prefill again.
    pub recomputed_tokens: u64,
}

/// A row's break (`tools: prefix changed at tool:Edit (token 1060)`), in words.
pub fn parse_break(row: &RequestRow) -> Option<Break> {
    let stop = row.break_reason.as_ref()?;
    let level = stop.level.as_str().to_string();
    let what = match stop.level {
        Level::Tools => "the tools list changed",
        Level::System => "the system prompt changed",
        Level::Messages => "the conversation history changed",
    };
    let because = match stop.reason {
        BreakReason::PrefixChanged => what,
        BreakReason::TtlExpired => "the cache entry expired (TTL) during the pause",
        BreakReason::ModelChanged => "the request switched to another model",
        BreakReason::Evicted => "the cache entry was evicted",
        BreakReason::BelowMinimum => "the prefix is below the minimum cacheable length",
        BreakReason::LookbackExceeded => "the last cache write lies beyond the lookback window",
        BreakReason::NotWritten => "no cache entry was written at that point",
        BreakReason::InFlight => "the entry was still being written by a concurrent request",
        BreakReason::Cold => "nothing was cached yet",
        BreakReason::Rounding => BreakReason::Rounding.as_str(),
    };
    let reason = stop.reason.as_str().to_string();
    let short = if stop.reason == BreakReason::PrefixChanged {
        format!("{level} changed")
    } else {
        format!("{level}: {reason}")
    };
    Some(Break {
        request: row.request,
        step: row.step,
        level,
        reason,
        segment: stop.segment.clone(),
        short,
        because: because.to_string(),
        recomputed_tokens: row.recomputed_tokens,
    })
}

/// Every break of a replay, in request order.
pub fn breaks(rows: &[RequestRow]) -> Vec<Break> {
    rows.iter().filter_map(parse_break).collect()
}
