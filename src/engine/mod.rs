//! The replay loop: scenario x strategy x cache model -> rows and a decision trace.
//!
//! The reference state machine decides every step; the strategy renders each assistant step as a
//! request (tools, system, conversation so far); the cache model prices it; the simulated clock
//! advances by time to first token, output generation, tool time and human time.

mod names;
mod price;
mod replay;
mod replayer;
mod run;
pub mod schedule;
mod send;
mod steps;
mod stream;

use std::fmt;

use serde::Serialize;

use crate::cache::{CacheConfig, LatencyModel, LatencyTable, PriceTable};
use crate::metrics::{RequestRow, SummaryRow};
use crate::plan_mode::Trace;

pub use replay::replay;
pub use run::{equivalence_violation, run, RunReport};

/// Prices, latency and cache parameters used to fill cost and TTFT.
#[derive(Debug, Clone)]
pub struct ReplayEnv {
    /// Model prices and cache rules (minimum lengths, multipliers).
    pub prices: PriceTable,
    /// TTFT of models whose provider is not in `latencies`.
    pub latency: LatencyModel,
    /// TTFT per provider (the `provider` of the request's model in the price table).
    pub latencies: LatencyTable,
    /// Parameters of the cache models `run` builds.
    pub caches: CacheConfig,
}

impl Default for ReplayEnv {
    fn default() -> Self {
        let latencies = LatencyTable::bundled();
        ReplayEnv {
            prices: PriceTable::bundled(),
            latency: latencies.default.clone(),
            latencies,
            caches: CacheConfig::default(),
        }
    }
}

impl ReplayEnv {
    /// The TTFT parameters for a provider.
    pub fn latency_for(&self, provider: &str) -> &LatencyModel {
        self.latencies
            .providers
            .get(provider)
            .unwrap_or(&self.latency)
    }
}

/// A replay that could not run: the step is illegal or the input is incomplete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// `file: step 7 (line 42)` or the file alone.
    pub place: String,
    /// What went wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}\n  hint: {}", self.place, self.message, self.hint)
    }
}

impl std::error::Error for ReplayError {}

/// The result of one scenario x strategy x cache model.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    /// The scenario's name.
    pub scenario: String,
    /// The plan-mode strategy replayed.
    pub strategy: String,
    /// The cache model (a registry name).
    pub cache: String,
    /// One row per request sent (replies, pings, compaction requests), in send order.
    pub rows: Vec<RequestRow>,
    /// What the reference state machine decided at every step.
    pub trace: Trace,
    /// Calls the strategy could not render (denied calls under a strategy that hides the tool).
    pub unrendered_calls: Vec<String>,
    /// Facts about the replay that are not decisions (per-request model overrides).
    pub notes: Vec<String>,
}

impl Replay {
    /// The replay's summary row (replies summed; pings and compactions apart).
    pub fn summary(&self) -> SummaryRow {
        SummaryRow::from_rows(&self.scenario, &self.strategy, &self.cache, &self.rows)
    }
}
