//! Per-request rows and per-session summaries (the columns of the README's *Output columns*).
//!
//! Rows hold typed values (the mode, the request's kind, where and why reuse stopped); only
//! [`RequestRow::cells`] and serialization format them. A summary's requests, tokens, hit rate
//! and TTFT count replies: keep-alive pings and compaction requests are summed in columns of
//! their own; its cost is the session's whole cost, theirs included.

use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};

use crate::cache::ReuseStop;
use crate::plan_mode::Mode;

/// The fixed columns of `requests.csv`, in order. Extra columns may only be appended.
pub const REQUEST_COLUMNS: &[&str] = &[
    "scenario",
    "strategy",
    "cache",
    "request",
    "step",
    "mode",
    "model",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "recomputed_tokens",
    "output_tokens",
    "hit_rate",
    "cost_usd",
    "ttft_ms",
    "break_reason",
];

/// Columns appended after the fixed ones in `requests.csv`.
pub const REQUEST_EXTRA_COLUMNS: &[&str] = &[
    "stream",
    "sent_at_ms",
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_creation_5m_tokens",
    "cache_creation_1h_tokens",
    "cache_read_input_tokens",
    "kind",
];

/// The fixed columns of `summary.csv`, in order.
pub const SUMMARY_COLUMNS: &[&str] = &[
    "scenario",
    "strategy",
    "cache",
    "requests",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "recomputed_tokens",
    "output_tokens",
    "hit_rate",
    "cost_usd",
    "ttft_ms",
];

/// Columns appended after the fixed ones in `summary.csv`: the keep-alive pings and the
/// compaction requests, which the fixed columns (replies only) leave out.
pub const SUMMARY_EXTRA_COLUMNS: &[&str] = &[
    "pings",
    "ping_prompt_tokens",
    "ping_cost_usd",
    "compactions",
    "compaction_prompt_tokens",
    "compaction_cost_usd",
];

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    /// An assistant step's request: the model's reply.
    Reply,
    /// The summarisation request of a `compact` step.
    Compaction,
    /// A keep-alive ping during a wait: the stream's last request re-sent, its reply discarded.
    Keepalive,
}

impl RequestKind {
    /// The name in the `kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Reply => "reply",
            RequestKind::Compaction => "compaction",
            RequestKind::Keepalive => "keepalive",
        }
    }
}

/// A name a row repeats (scenario, strategy, cache model, model, stream): one shared copy per
/// replay rather than one per row. It reads, compares, prints and serializes as the string it
/// holds.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Name(Arc<str>);

impl Name {
    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(s.into())
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Name(s.into())
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// One API request of one replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRow {
    /// The scenario's name.
    pub scenario: Name,
    /// The plan-mode strategy replayed.
    pub strategy: Name,
    /// The cache model (a registry name).
    pub cache: Name,
    /// 1-based, in send order.
    pub request: usize,
    /// 1-based scenario step.
    pub step: usize,
    /// The permission mode the request was made in.
    pub mode: Mode,
    /// The model the request ran on.
    pub model: Name,
    /// Prompt tokens: cached plus recomputed.
    pub prompt_tokens: u64,
    /// Tokens read from the cache.
    pub cached_tokens: u64,
    /// Recomputed tokens stored for later (both TTL classes).
    pub cache_write_tokens: u64,
    /// Prompt tokens not read from the cache: prefilled again.
    pub recomputed_tokens: u64,
    /// Tokens the reply generates.
    pub output_tokens: u64,
    /// cached / prompt (0 for an empty prompt).
    pub hit_rate: f64,
    /// Cost in dollars: uncached input, writes and reads at the model's multipliers, output
    /// and explicit storage.
    pub cost_usd: f64,
    /// Time to first token from the provider's latency model, in ms.
    pub ttft_ms: f64,
    /// Where and why reuse stopped, when the request reused less than the previous request's
    /// whole prompt in its stream (serialized as its text, empty when `None`).
    #[serde(serialize_with = "break_text")]
    pub break_reason: Option<ReuseStop>,
    /// The stream that sent it (`main` or a subagent's name).
    pub stream: Name,
    /// When it was sent, in ms on the replay's clock (which starts at 0).
    pub sent_at_ms: u64,
    /// Anthropic usage: uncached input after the last breakpoint.
    pub input_tokens: u64,
    /// Anthropic usage: tokens written to the cache (both TTL classes).
    pub cache_creation_input_tokens: u64,
    /// The part written with a 5-minute TTL (or the cache's only one).
    pub cache_creation_5m_tokens: u64,
    /// The part written with a 1-hour TTL.
    pub cache_creation_1h_tokens: u64,
    /// Anthropic usage: tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// What the request is for: a reply (an assistant step), a compaction (the summarisation
    /// request of a `compact` step) or a keep-alive ping during a wait.
    pub kind: RequestKind,
}

fn break_text<S: Serializer>(stop: &Option<ReuseStop>, s: S) -> Result<S::Ok, S::Error> {
    match stop {
        Some(stop) => s.collect_str(stop),
        None => s.serialize_str(""),
    }
}

impl RequestRow {
    /// The row tagged as a request of `kind`.
    pub fn tagged(mut self, kind: RequestKind) -> Self {
        self.kind = kind;
        self
    }

    /// Whether the request is a reply (what hit rates, TTFT and summaries count).
    pub fn is_reply(&self) -> bool {
        self.kind == RequestKind::Reply
    }

    /// The break reason as the `break_reason` column writes it (empty when none).
    pub fn break_text(&self) -> String {
        self.break_reason
            .as_ref()
            .map_or_else(String::new, ToString::to_string)
    }

    /// The row's cells as strings, fixed columns then extra columns; floats are printed with a
    /// fixed precision so output bytes are deterministic.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.scenario.to_string(),
            self.strategy.to_string(),
            self.cache.to_string(),
            self.request.to_string(),
            self.step.to_string(),
            self.mode.to_string(),
            self.model.to_string(),
            self.prompt_tokens.to_string(),
            self.cached_tokens.to_string(),
            self.cache_write_tokens.to_string(),
            self.recomputed_tokens.to_string(),
            self.output_tokens.to_string(),
            format!("{:.4}", self.hit_rate),
            format!("{:.6}", self.cost_usd),
            format!("{:.1}", self.ttft_ms),
            self.break_text(),
            self.stream.to_string(),
            self.sent_at_ms.to_string(),
            self.input_tokens.to_string(),
            self.cache_creation_input_tokens.to_string(),
            self.cache_creation_5m_tokens.to_string(),
            self.cache_creation_1h_tokens.to_string(),
            self.cache_read_input_tokens.to_string(),
            self.kind.as_str().to_string(),
        ]
    }
}

/// One scenario x strategy x cache model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    /// The scenario's name.
    pub scenario: String,
    /// The plan-mode strategy replayed.
    pub strategy: String,
    /// The cache model (a registry name).
    pub cache: String,
    /// Replies sent (pings and compaction requests are in their own columns).
    pub requests: usize,
    /// Prompt tokens of the replies.
    pub prompt_tokens: u64,
    /// Of those, tokens read from the cache.
    pub cached_tokens: u64,
    /// Tokens the replies wrote to the cache.
    pub cache_write_tokens: u64,
    /// Tokens the replies prefilled again (prompt minus cached).
    pub recomputed_tokens: u64,
    /// Tokens the replies generated.
    pub output_tokens: u64,
    /// Ratio of the sums: cached / prompt.
    pub hit_rate: f64,
    /// What the session costs in all: replies, pings and compaction requests (the last two's
    /// shares are in `pings` and `compactions`).
    pub cost_usd: f64,
    /// Mean time to first token per request.
    pub ttft_ms: f64,
    /// The keep-alive pings: how many, their prompt tokens and cost.
    pub pings: Extra,
    /// The compaction requests: how many, their prompt tokens and cost.
    pub compactions: Extra,
}

/// Requests of one kind that are not replies, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Extra {
    /// How many.
    pub requests: usize,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Their cost in dollars (also counted in the summary's `cost_usd`).
    pub cost_usd: f64,
}

impl Extra {
    fn of<'a>(rows: impl Iterator<Item = &'a RequestRow>) -> Self {
        rows.fold(Extra::default(), |e, r| Extra {
            requests: e.requests + 1,
            prompt_tokens: e.prompt_tokens + r.prompt_tokens,
            cost_usd: e.cost_usd + r.cost_usd,
        })
    }

    fn cells(&self) -> [String; 3] {
        [
            self.requests.to_string(),
            self.prompt_tokens.to_string(),
            format!("{:.6}", self.cost_usd),
        ]
    }
}

impl SummaryRow {
    /// Sums the replies of one replay; pings and compaction requests are summed apart (and
    /// counted in the cost only).
    pub fn from_rows(scenario: &str, strategy: &str, cache: &str, all: &[RequestRow]) -> Self {
        let of = |kind: RequestKind| Extra::of(all.iter().filter(move |r| r.kind == kind));
        let rows: Vec<&RequestRow> = all.iter().filter(|r| r.is_reply()).collect();
        let sum = |f: fn(&RequestRow) -> u64| rows.iter().map(|r| f(r)).sum::<u64>();
        let prompt = sum(|r| r.prompt_tokens);
        let cached = sum(|r| r.cached_tokens);
        SummaryRow {
            scenario: scenario.to_string(),
            strategy: strategy.to_string(),
            cache: cache.to_string(),
            requests: rows.len(),
            prompt_tokens: prompt,
            cached_tokens: cached,
            cache_write_tokens: sum(|r| r.cache_write_tokens),
            recomputed_tokens: sum(|r| r.recomputed_tokens),
            output_tokens: sum(|r| r.output_tokens),
            hit_rate: if prompt == 0 {
                0.0
            } else {
                cached as f64 / prompt as f64
            },
            cost_usd: all.iter().map(|r| r.cost_usd).sum(),
            ttft_ms: if rows.is_empty() {
                0.0
            } else {
                rows.iter().map(|r| r.ttft_ms).sum::<f64>() / rows.len() as f64
            },
            pings: of(RequestKind::Keepalive),
            compactions: of(RequestKind::Compaction),
        }
    }

    /// The cells of [`SUMMARY_EXTRA_COLUMNS`].
    pub fn extra_cells(&self) -> Vec<String> {
        let mut out = self.pings.cells().to_vec();
        out.extend(self.compactions.cells());
        out
    }

    /// The cells of the fixed `summary.csv` columns, floats at a fixed precision.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.scenario.clone(),
            self.strategy.clone(),
            self.cache.clone(),
            self.requests.to_string(),
            self.prompt_tokens.to_string(),
            self.cached_tokens.to_string(),
            self.cache_write_tokens.to_string(),
            self.recomputed_tokens.to_string(),
            self.output_tokens.to_string(),
            format!("{:.4}", self.hit_rate),
            format!("{:.6}", self.cost_usd),
            format!("{:.1}", self.ttft_ms),
        ]
    }
}

/// The first request whose prompt plus output exceeds its model's context window, described
/// for an error message (the provider would refuse such a request).
pub fn first_overrun<'a>(
    rows: impl IntoIterator<Item = &'a RequestRow>,
    prices: &crate::cache::PriceTable,
) -> Option<String> {
    rows.into_iter().find_map(|r| {
        let window = prices.get(&r.model)?.context_window?;
        let tokens = r.prompt_tokens.saturating_add(r.output_tokens);
        (tokens > window).then(|| {
            format!(
                "request {} sends {tokens} prompt + output tokens, over the {window}-token context window of {}",
                r.request, r.model
            )
        })
    })
}
