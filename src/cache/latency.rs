//! Estimated time to first token, per provider, from a bundled data table (`data/latency.toml`).
//!
//! TTFT ≈ fixed overhead + recomputed tokens / prefill rate + a small cost per cached token
//! (docs/cache-models.md, *Prices and latency*). The table documents how each provider's numbers were derived from
//! published data points (e.g. Anthropic: 100k tokens 11.5 s uncached, 2.4 s cached).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::CacheOutcome;

const BUNDLED: &str = include_str!("../../data/latency.toml");

/// One provider's TTFT parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyModel {
    /// Fixed time before the first token, whatever the prompt (ms).
    pub overhead_ms: f64,
    /// Recomputed (prefilled) tokens processed per second.
    pub prefill_tokens_per_s: f64,
    /// Time each cached token still adds (ms per token).
    pub cached_token_ms: f64,
    /// Where the figures come from.
    #[serde(default)]
    pub source: String,
}

impl Default for LatencyModel {
    /// Anthropic's launch figures (see `data/latency.toml`).
    fn default() -> Self {
        LatencyModel {
            overhead_ms: 500.0,
            prefill_tokens_per_s: 9_091.0,
            cached_token_ms: 0.019,
            source: String::new(),
        }
    }
}

impl LatencyModel {
    /// Estimated time to first token of a request with this outcome, in ms.
    pub fn ttft_ms(&self, outcome: &CacheOutcome) -> f64 {
        self.overhead_ms
            + outcome.recomputed_tokens() as f64 * 1000.0 / self.prefill_tokens_per_s.max(1e-9)
            + outcome.cached_tokens as f64 * self.cached_token_ms
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LatencyFile {
    /// The table's version, as the file states it.
    #[serde(default)]
    version: String,
    /// TTFT parameters by provider name.
    #[serde(default)]
    providers: BTreeMap<String, LatencyModel>,
    /// The parameters of providers not listed.
    default: LatencyModel,
}

/// TTFT parameters per provider, with a default for providers not listed.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyTable {
    /// The table's version (a date), as `data/latency.toml` states it.
    pub version: String,
    /// TTFT parameters by provider name (the price table's `provider`).
    pub providers: BTreeMap<String, LatencyModel>,
    /// The parameters of providers not listed.
    pub default: LatencyModel,
}

impl Default for LatencyTable {
    fn default() -> Self {
        Self::bundled()
    }
}

impl LatencyTable {
    /// The table compiled into the binary.
    pub fn bundled() -> Self {
        let f: LatencyFile = toml::from_str(BUNDLED).expect("bundled latency table is valid TOML");
        LatencyTable {
            version: f.version,
            providers: f.providers,
            default: f.default,
        }
    }

    /// The parameters of `provider`, or the default.
    pub fn for_provider(&self, provider: &str) -> &LatencyModel {
        self.providers.get(provider).unwrap_or(&self.default)
    }
}
