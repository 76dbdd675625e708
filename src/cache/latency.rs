//! Estimated time to first token.
//!
//! TTFT ≈ fixed overhead + recomputed tokens / prefill rate + a small cost per cached token.
//! Defaults fitted to Anthropic's launch figures (CACHE_SEMANTICS.md §5): 100k tokens 11.5 s
//! uncached, 10k tokens 1.6 s uncached, so 90k tokens take 9.9 s: ≈ 9,100 tokens/s prefill and
//! ≈ 0.5 s overhead; 100k cached in 2.4 s gives ≈ 0.019 ms per cached token.

use serde::{Deserialize, Serialize};

use super::CacheOutcome;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyModel {
    pub overhead_ms: f64,
    pub prefill_tokens_per_s: f64,
    pub cached_token_ms: f64,
}

impl Default for LatencyModel {
    fn default() -> Self {
        LatencyModel {
            overhead_ms: 500.0,
            prefill_tokens_per_s: 9_091.0,
            cached_token_ms: 0.019,
        }
    }
}

impl LatencyModel {
    pub fn ttft_ms(&self, outcome: &CacheOutcome) -> f64 {
        self.overhead_ms
            + outcome.recomputed_tokens() as f64 * 1000.0 / self.prefill_tokens_per_s
            + outcome.cached_tokens as f64 * self.cached_token_ms
    }
}
