//! Per-request rows and per-session summaries (the columns of DESIGN.md §5).

use serde::Serialize;

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

/// One API request of one replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRow {
    pub scenario: String,
    pub strategy: String,
    pub cache: String,
    /// 1-based, in send order.
    pub request: usize,
    /// 1-based scenario step.
    pub step: usize,
    pub mode: String,
    pub model: String,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
    pub recomputed_tokens: u64,
    pub output_tokens: u64,
    pub hit_rate: f64,
    pub cost_usd: f64,
    pub ttft_ms: f64,
    /// Where and why reuse stopped, when the request reused less than the previous request's
    /// whole prompt in its stream; empty otherwise.
    pub break_reason: String,
    pub stream: String,
    pub sent_at_ms: u64,
    /// Anthropic usage: uncached input after the last breakpoint.
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_creation_5m_tokens: u64,
    pub cache_creation_1h_tokens: u64,
    pub cache_read_input_tokens: u64,
    /// What the request is for: `reply` (an assistant step), `compaction` (the summarisation
    /// request of a `compact` step) or `keepalive` (a ping during a wait).
    pub kind: String,
}

impl RequestRow {
    /// The row tagged as a request of `kind`.
    pub fn tagged(mut self, kind: RequestKind) -> Self {
        self.kind = kind.as_str().to_string();
        self
    }

    /// The row's cells as strings, fixed columns then extra columns; floats are printed with a
    /// fixed precision so output bytes are deterministic.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.scenario.clone(),
            self.strategy.clone(),
            self.cache.clone(),
            self.request.to_string(),
            self.step.to_string(),
            self.mode.clone(),
            self.model.clone(),
            self.prompt_tokens.to_string(),
            self.cached_tokens.to_string(),
            self.cache_write_tokens.to_string(),
            self.recomputed_tokens.to_string(),
            self.output_tokens.to_string(),
            format!("{:.4}", self.hit_rate),
            format!("{:.6}", self.cost_usd),
            format!("{:.1}", self.ttft_ms),
            self.break_reason.clone(),
            self.stream.clone(),
            self.sent_at_ms.to_string(),
            self.input_tokens.to_string(),
            self.cache_creation_input_tokens.to_string(),
            self.cache_creation_5m_tokens.to_string(),
            self.cache_creation_1h_tokens.to_string(),
            self.cache_read_input_tokens.to_string(),
            self.kind.clone(),
        ]
    }
}

/// One scenario x strategy x cache model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    pub scenario: String,
    pub strategy: String,
    pub cache: String,
    pub requests: usize,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
    pub recomputed_tokens: u64,
    pub output_tokens: u64,
    /// Ratio of the sums: cached / prompt.
    pub hit_rate: f64,
    /// Total cost of the session.
    pub cost_usd: f64,
    /// Mean time to first token per request.
    pub ttft_ms: f64,
}

impl SummaryRow {
    /// Sums the rows of one replay.
    pub fn from_rows(scenario: &str, strategy: &str, cache: &str, rows: &[RequestRow]) -> Self {
        let sum = |f: fn(&RequestRow) -> u64| rows.iter().map(f).sum::<u64>();
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
            cost_usd: rows.iter().map(|r| r.cost_usd).sum(),
            ttft_ms: if rows.is_empty() {
                0.0
            } else {
                rows.iter().map(|r| r.ttft_ms).sum::<f64>() / rows.len() as f64
            },
        }
    }

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
