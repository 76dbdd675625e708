//! Google Gemini context caching (docs/cache-models.md, *gemini*), two models:
//!
//! **`gemini`: implicit caching** (ai.google.dev/gemini-api/docs/caching, version last updated
//! 2026-10-13; docs.cloud.google.com context-cache-overview):
//! - on by default for Gemini 2.5 and newer; a request whose prefix matches a recent request
//!   reads it at the cached price, with no write fee and no storage fee;
//! - nothing below the model's minimum input (price table `min_cacheable`: 2,048 for 2.5 Flash
//!   and Pro, 4,096 for 3.x in that version; earlier versions said 1,024 / 4,096);
//! - granularity, lifetime and whether the reply is cached are unpublished ("send requests with
//!   similar prefix in a short amount of time"). The model assumes token granularity, a 5 min
//!   idle lifetime and prompts only: the longest shared prefix, an upper bound. Google gives no
//!   savings guarantee and third parties report low hit rates on growing chats.
//!
//! **`gemini-explicit`: a created cache object** (`cachedContents`; same pages, and
//! discuss.ai.google.dev thread 92919):
//! - the harness creates an object holding a prefix of the request (here: up to the last
//!   `cache_control` mark of the scenario, else tools + system) and refers to it; a request
//!   whose prefix is the object's content reads it at the cached price, the rest is input;
//! - creating it bills its tokens at the standard input price, and the request that created it
//!   then reads them at the cached price: the price table's `write_5m` for Gemini models is
//!   1 + read (1.1, derived), and the creating request reports those tokens as written;
//! - storage is billed per token-hour of the TTL (price table `storage_per_mtok_hour`, e.g.
//!   $4.50 per 1M token-hours for 2.5 Pro), charged to the creating request for the whole TTL;
//! - the TTL defaults to 1 h; an object is not refreshed by use unless the harness extends it
//!   (`extend_on_use`: each use moves the expiry to now + TTL and pays storage for the extension);
//! - an object below the model's minimum cannot be created: the request is plain input.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::common::{self, HashKeyed};
use super::cursor::{ByName, Cursor, Streams};
use super::unit_prefix::{UnitPrefixCache, UnitPrefixConfig};
use super::{BreakReason, CacheModel, CacheOutcome, PriceTable};
use crate::prompt::{Level, Request};
use crate::util::duration_str;

/// The documented (and, where unpublished, assumed) implicit-caching defaults.
pub fn implicit_config() -> UnitPrefixConfig {
    UnitPrefixConfig {
        unit: 1,
        min_tokens: None,
        idle_ttl: Duration::from_secs(5 * 60),
        max_age: Duration::from_secs(3600),
        cache_reply: false,
        build_delay: Duration::ZERO,
    }
}

/// The `gemini` cache model (implicit caching).
pub fn implicit(config: UnitPrefixConfig, prices: &PriceTable) -> UnitPrefixCache {
    UnitPrefixCache::new("gemini", config, prices)
}

/// Parameters of explicit Gemini caching.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExplicitConfig {
    /// Lifetime of a created cache object.
    #[serde(with = "duration_str")]
    pub ttl: Duration,
    /// The harness extends an object's TTL each time a request uses it.
    pub extend_on_use: bool,
    /// Overrides the per-model minimum of the price table.
    pub min_tokens: Option<u64>,
}

impl Default for ExplicitConfig {
    fn default() -> Self {
        ExplicitConfig {
            ttl: Duration::from_secs(3600),
            extend_on_use: false,
            min_tokens: None,
        }
    }
}

impl super::Section for ExplicitConfig {}

#[derive(Debug, Clone, Copy)]
struct Object {
    /// When the object's TTL ends, in ms on the replay's clock.
    expires_at: u64,
}

/// Gemini explicit caching: cache objects created by the harness, billed for storage.
#[derive(Debug)]
pub struct ExplicitCache {
    /// The parameters it runs with.
    config: ExplicitConfig,
    /// Smallest object each model accepts, in tokens (the price table's `min_cacheable`).
    min_by_model: HashMap<String, u64>,
    /// Objects by chained hash of their content, per model.
    models: ByName<HashKeyed<u64, Object>>,
    /// Each stream's cursor over its last request, with its marks (per stream and model).
    streams: Streams<ExplicitStream>,
}

/// A stream's cursor and, in step with it, where its segments' marks are.
#[derive(Debug, Default)]
struct ExplicitStream {
    /// Where the stream's last request was (the kept segments are compared from it).
    cursor: Cursor,
    /// Indices of the cursor's segments with a `cache_control` mark, increasing.
    marks: Vec<usize>,
    /// Indices of its tools and system segments, increasing.
    heads: Vec<usize>,
}

impl ExplicitStream {
    /// Moves to `req`'s prompt, updating the indices past the kept segments only.
    fn advance(&mut self, req: &Request) {
        let keep = self.cursor.advance(req, [0; 3]).keep;
        let cut = |v: &mut Vec<usize>| v.truncate(v.partition_point(|&i| i < keep));
        cut(&mut self.marks);
        cut(&mut self.heads);
        for (i, s) in req.segments.iter().enumerate().skip(keep) {
            if s.breakpoint.is_some() {
                self.marks.push(i);
            }
            if s.level < Level::Messages {
                self.heads.push(i);
            }
        }
    }

    /// Index of the last segment of the object's content: the last `cache_control` mark, else
    /// the last tools/system segment.
    fn content_end(&self) -> Option<usize> {
        self.marks.last().or(self.heads.last()).copied()
    }
}

impl ExplicitCache {
    /// An empty explicit cache; each model's minimum cacheable length comes from `prices`.
    pub fn new(config: ExplicitConfig, prices: &PriceTable) -> Self {
        let min_by_model = prices
            .names()
            .filter_map(|n| prices.get(n).map(|p| (n.to_string(), p.min_cacheable)))
            .collect();
        ExplicitCache {
            config,
            min_by_model,
            models: ByName::default(),
            streams: Streams::default(),
        }
    }

    fn min_tokens(&self, model: &str) -> u64 {
        self.config
            .min_tokens
            .or_else(|| self.min_by_model.get(model).copied())
            .unwrap_or(0)
            .max(1)
    }
}

impl CacheModel for ExplicitCache {
    fn name(&self) -> &str {
        "gemini-explicit"
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let now = req.sent_at_ms;
        let min = self.min_tokens(&req.model);
        let ttl = self.config.ttl.as_millis() as u64;
        let extend = self.config.extend_on_use;
        let st = self.streams.stream(&req.stream);
        st.advance(req);
        let end = st.content_end();
        let cursor = &st.cursor;
        let prompt = cursor.total();
        let n = req.segments.len();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            uncached_input_tokens: prompt,
            ..CacheOutcome::default()
        };
        let Some(end) = end else {
            outcome.stop = cursor.stop_at(n, 0, BreakReason::NotWritten);
            return outcome;
        };
        let tokens = cursor.ends()[end];
        if tokens < min {
            outcome.stop = cursor.stop_at(n, 0, BreakReason::BelowMinimum);
            return outcome;
        }
        let key = cursor.hashes()[end];
        let others = self
            .models
            .iter()
            .any(|(m, o)| m != req.model && !o.is_empty());
        let objects = self
            .models
            .get_or_insert_with(&req.model, HashKeyed::default);
        let token_seconds = |ms: u64| tokens.saturating_mul(ms) / 1000;
        let cold = objects.is_empty();
        match objects.get_mut(&key) {
            Some(o) if now < o.expires_at => {
                outcome.cached_tokens = tokens;
                if extend {
                    let until = now.saturating_add(ttl);
                    outcome.storage_token_seconds = token_seconds(until - o.expires_at.min(until));
                    o.expires_at = o.expires_at.max(until);
                }
                outcome.stop = (tokens < prompt)
                    .then(|| cursor.stop_at(n, tokens, BreakReason::NotWritten))
                    .flatten();
            }
            existing => {
                let reason = match existing {
                    Some(_) => BreakReason::TtlExpired,
                    None if cold => common::cold_reason(others),
                    None => BreakReason::PrefixChanged,
                };
                let expires_at = now.saturating_add(ttl);
                objects.insert(key, Object { expires_at });
                outcome.write_5m_tokens = tokens;
                outcome.storage_token_seconds = token_seconds(ttl);
                outcome.stop = cursor.stop_at(n, 0, reason);
            }
        }
        outcome.uncached_input_tokens =
            prompt - outcome.cached_tokens - outcome.cache_write_tokens();
        outcome
    }

    /// Objects are created before the request that needs them (in `lookup`); the reply is not
    /// cached.
    fn store(&mut self, _req: &Request, _outcome: &CacheOutcome, _visible: u64, _done: u64) {}
}
