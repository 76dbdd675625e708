//! Prefix-cache models behind one small trait, plus pricing and the latency model.
//!
//! A model sees requests in send order. `lookup` answers how much of a request's prompt is served
//! from the cache (refreshing what it hits); `store` then records what the request leaves behind.
//! Keeping the two apart lets entries become readable only once the response has begun, which is
//! how concurrent requests miss a prefix that is still being written.

pub mod anthropic;
mod common;
pub mod config;
mod cursor;
pub mod deepseek;
mod error;
pub mod gemini;
mod ideal;
pub mod latency;
pub mod model_family;
pub mod openai;
pub mod paged;
pub mod pricing;
pub mod radix;
pub mod registry;
pub mod unit_prefix;

use std::fmt;

use crate::prompt::{Level, Request};

pub use anthropic::{BreakpointCache, BreakpointConfig, Layout};
pub use common::{reasoning_tokens, work, REASONING_BASE};
pub use config::CacheConfig;
pub use cursor::{chain_hash, with_hint, SentHint};
pub use error::CacheError;
pub use ideal::IdealCache;
pub use latency::{LatencyModel, LatencyTable};
pub use openai::{AgeFrom, OpenAiCache, OpenAiConfig};
pub use paged::{PagedCache, PagedConfig};
pub use pricing::{ModelPrice, PriceTable};
pub use radix::{RadixCache, RadixConfig};
pub use registry::{CacheEntry, Section, CACHE_NAMES, REGISTRY};
pub use unit_prefix::{UnitPrefixCache, UnitPrefixConfig};

/// Why the reused prefix of a request ended where it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakReason {
    /// Nothing was cached for this model yet.
    Cold,
    /// The prompt differs from every cached prefix at this point.
    PrefixChanged,
    /// The matching entry existed but its TTL ran out on the simulated clock.
    TtlExpired,
    /// The prefix is shorter than the model's minimum cacheable length.
    BelowMinimum,
    /// The matching entry lies further back than the read lookback reaches.
    LookbackExceeded,
    /// The matching entry was evicted to make room.
    Evicted,
    /// The hit was rounded down to the cache's granularity (block, page, 128-token unit).
    Rounding,
    /// The request runs on a different model than the cached entries.
    ModelChanged,
    /// No entry was written at or before this point (e.g. no breakpoint covered it).
    NotWritten,
    /// The entry is still being written by a concurrent request.
    InFlight,
}

impl BreakReason {
    /// The reason as break explanations write it (`ttl expired`).
    pub fn as_str(self) -> &'static str {
        match self {
            BreakReason::Cold => "cold cache",
            BreakReason::PrefixChanged => "prefix changed",
            BreakReason::TtlExpired => "ttl expired",
            BreakReason::BelowMinimum => "below minimum",
            BreakReason::LookbackExceeded => "lookback exceeded",
            BreakReason::Evicted => "evicted",
            BreakReason::Rounding => "rounding",
            BreakReason::ModelChanged => "model changed",
            BreakReason::NotWritten => "not written",
            BreakReason::InFlight => "in flight",
        }
    }
}

impl fmt::Display for BreakReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the reuse of a request stopped and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReuseStop {
    /// Token position (0-based) where the reuse stopped: the number of cached tokens before
    /// rounding, i.e. the length of the matching prefix.
    pub at_token: u64,
    /// Level of the segment holding that position.
    pub level: Level,
    /// Label of the segment holding that position (e.g. `tool:Edit`).
    pub segment: String,
    /// Why the reuse stopped there.
    pub reason: BreakReason,
}

impl fmt::Display for ReuseStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} at {} (token {})",
            self.level.as_str(),
            self.reason,
            self.segment,
            self.at_token
        )
    }
}

/// What one request does to and gets from the cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheOutcome {
    /// The request's whole prompt, in tokens.
    pub prompt_tokens: u64,
    /// Tokens read from the cache.
    pub cached_tokens: u64,
    /// Part of the recomputed tokens stored for later at the 5-minute (or only) write price.
    pub write_5m_tokens: u64,
    /// Part of the recomputed tokens stored for later at the 1-hour write price.
    pub write_1h_tokens: u64,
    /// Anthropic-style `input_tokens`: prompt tokens after the last breakpoint. For models without
    /// breakpoints this is simply the recomputed count minus the writes.
    pub uncached_input_tokens: u64,
    /// Set when less than the whole prompt was read.
    pub stop: Option<ReuseStop>,
    /// Set when the provider would refuse the request (the Anthropic API answers 400 to more
    /// than 4 breakpoints, or to a 1 h breakpoint after a 5 m one); the engine reports it as bad
    /// input instead of pricing a request that could not be sent.
    pub rejected: Option<String>,
    /// Token-seconds of explicit cache storage this request pays for (Gemini `cachedContents`:
    /// the object's tokens times its TTL, billed when it is created); 0 for other caches.
    pub storage_token_seconds: u64,
}

impl CacheOutcome {
    /// Prompt tokens not read from the cache (prefilled again).
    pub fn recomputed_tokens(&self) -> u64 {
        self.prompt_tokens - self.cached_tokens
    }
    /// Tokens written, both TTL classes.
    pub fn cache_write_tokens(&self) -> u64 {
        self.write_5m_tokens + self.write_1h_tokens
    }
    /// cached / prompt (0 for an empty prompt).
    pub fn hit_rate(&self) -> f64 {
        if self.prompt_tokens == 0 {
            0.0
        } else {
            self.cached_tokens as f64 / self.prompt_tokens as f64
        }
    }
}

/// One prefix-cache model (a provider's cache or an inference engine's).
pub trait CacheModel: Send {
    /// Name as given to `--cache`.
    fn name(&self) -> &str;

    /// How much of `req` is served from cache at `req.sent_at_ms`; refreshes the entries it hits.
    fn lookup(&mut self, req: &Request) -> CacheOutcome;

    /// Records what `req` leaves in the cache. Entries become readable at `visible_at_ms` (when
    /// the response begins); a generated reply is complete at `completed_at_ms`.
    fn store(
        &mut self,
        req: &Request,
        outcome: &CacheOutcome,
        visible_at_ms: u64,
        completed_at_ms: u64,
    );

    /// Whether writes are billed at the model's write multipliers. Caches whose provider
    /// charges nothing for writes (OpenAI before GPT-5.6, self-hosted engines) say no, and
    /// their writes are billed as plain input.
    fn charges_writes(&self) -> bool {
        true
    }
}

/// The default of `--cache`.
pub const DEFAULT_CACHE: &str = "anthropic";

/// Builds a fresh cache model by name with the documented default parameters.
pub fn build(name: &str, prices: &PriceTable) -> Result<Box<dyn CacheModel>, CacheError> {
    build_with(name, prices, &CacheConfig::default())
}

/// Builds a fresh cache model by name with the given parameters (see [`registry`]).
pub fn build_with(
    name: &str,
    prices: &PriceTable,
    config: &CacheConfig,
) -> Result<Box<dyn CacheModel>, CacheError> {
    match registry::entry(name) {
        Some(entry) => entry.build(config, prices),
        None => Err(CacheError::Unknown {
            name: name.to_string(),
        }),
    }
}
