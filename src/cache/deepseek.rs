//! DeepSeek's context caching on disk (docs/cache-models.md, *deepseek*; api-docs.deepseek.com
//! `guides/kv_cache` and `news/news0802`, read 2026-12-01).
//!
//! - On by default for every request; a hit is a prefix matched **from token 0** only.
//! - The storage unit is **64 tokens** (news0802, 2024): a hit is the shared prefix in whole
//!   64-token units, and content shorter than one unit is not cached. E.g. a 1,000-token shared
//!   prefix hits 960 (15 x 64). The rule is the provider's, whatever the model: `min_tokens` 64.
//! - No write fee: a miss is billed as plain input (`prompt_cache_miss_tokens`), a hit at the
//!   model's cache-hit price (`prompt_cache_hit_tokens`; the two add up to `prompt_tokens`).
//! - Building an entry "takes seconds": an entry is readable only `build_delay` (5 s, the
//!   documented "a few seconds") after the response began, so a request sent sooner misses.
//! - Unused entries are cleared after "a few hours to a few days", best effort: `idle_ttl`
//!   defaults to the low end (3 h), `max_age` to 3 days.
//! - The guide's multi-round example hits the first round's system and user messages, not the
//!   assistant reply: only prompts are stored (`cache_reply = false`).
//!
//! Newer guide versions (V4, sliding-window attention) describe whole "cache prefix units"
//! written at the ends of user input and model output and at unpublished intervals, and no
//! longer mention 64; the 64-token rule is the one documented with a number, kept as default.

use std::time::Duration;

use super::unit_prefix::{UnitPrefixCache, UnitPrefixConfig};
use super::PriceTable;

/// The documented DeepSeek defaults.
pub fn default_config() -> UnitPrefixConfig {
    UnitPrefixConfig {
        unit: 64,
        min_tokens: Some(64),
        idle_ttl: Duration::from_secs(3 * 3600),
        max_age: Duration::from_secs(3 * 24 * 3600),
        cache_reply: false,
        build_delay: Duration::from_secs(5),
    }
}

/// The `deepseek` cache model.
pub fn build(config: UnitPrefixConfig, prices: &PriceTable) -> UnitPrefixCache {
    UnitPrefixCache::new("deepseek", config, prices)
}
