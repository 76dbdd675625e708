//! An automatic prefix cache in whole units of tokens counted from token 0, with no write fee:
//! the shape shared by DeepSeek's disk cache (64-token units) and Gemini's implicit caching
//! (granularity unpublished). The provider modules (`deepseek.rs`, `gemini.rs`) give the
//! documented parameters; this file holds the mechanics.
//!
//! - A hit is the longest prefix of the prompt, in whole `unit`s from token 0, that an earlier
//!   request stored and that is still alive; nothing is read or written below the model's
//!   minimum (the price table's `min_cacheable`, unless `min_tokens` overrides it).
//! - A request stores the whole units of its prompt (and of its visible reply when
//!   `cache_reply` and no reasoning preceded it), readable `build_delay` after its response
//!   began: an entry being built cannot be hit.
//! - Entries unused for `idle_ttl`, or older than `max_age`, are gone; a hit refreshes them.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::common::{self, HashKeyed, SeenPrefixes};
use super::cursor::{AutoStream, ByName, Streams};
use super::{BreakReason, CacheModel, CacheOutcome, PriceTable};
use crate::prompt::Request;
use crate::scenario::format::duration_str;

/// Parameters of a unit-prefix cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UnitPrefixConfig {
    /// Hits and entries are whole multiples of this many tokens from token 0.
    pub unit: u64,
    /// Overrides the per-model minimum cacheable prompt of the price table.
    pub min_tokens: Option<u64>,
    /// Entries unused for this long are gone.
    #[serde(with = "duration_str")]
    pub idle_ttl: Duration,
    /// Entries older than this are gone, used or not.
    #[serde(with = "duration_str")]
    pub max_age: Duration,
    /// Whether the visible reply is cached with the prompt (so the next prompt, which repeats
    /// it, can hit through it).
    pub cache_reply: bool,
    /// Time from the response's start until the stored entry can be hit.
    #[serde(with = "duration_str")]
    pub build_delay: Duration,
}

impl Default for UnitPrefixConfig {
    fn default() -> Self {
        UnitPrefixConfig {
            unit: 1,
            min_tokens: None,
            idle_ttl: Duration::from_secs(5 * 60),
            max_age: Duration::from_secs(24 * 3600),
            cache_reply: false,
            build_delay: Duration::ZERO,
        }
    }
}

impl UnitPrefixConfig {
    /// Checks values no cache could work with.
    pub fn validate(&self) -> Result<(), String> {
        if self.unit == 0 {
            return Err("unit must be at least 1".into());
        }
        Ok(())
    }
}

impl super::Section for UnitPrefixConfig {
    fn check(&self) -> Result<(), String> {
        self.validate()
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    visible_at: u64,
    written_at: u64,
    last_used: u64,
}

#[derive(Debug, Default)]
struct ModelState {
    units: HashKeyed<u64, Entry>,
    seen: SeenPrefixes,
}

/// An automatic cache of whole token units from token 0, writes free.
#[derive(Debug)]
pub struct UnitPrefixCache {
    name: String,
    config: UnitPrefixConfig,
    min_by_model: HashMap<String, u64>,
    models: ByName<ModelState>,
    streams: Streams<AutoStream>,
}

impl UnitPrefixCache {
    /// A cache called `name` (as `--cache` gives it) with these parameters; per-model minimums
    /// come from `prices`.
    pub fn new(name: &str, config: UnitPrefixConfig, prices: &PriceTable) -> Self {
        let min_by_model = prices
            .names()
            .filter_map(|n| prices.get(n).map(|p| (n.to_string(), p.min_cacheable)))
            .collect();
        UnitPrefixCache {
            name: name.to_string(),
            config,
            min_by_model,
            models: ByName::default(),
            streams: Streams::default(),
        }
    }

    pub fn config(&self) -> &UnitPrefixConfig {
        &self.config
    }

    /// The smallest prompt that is cached at all (at least one unit).
    fn min_tokens(&self, model: &str) -> u64 {
        self.config
            .min_tokens
            .or_else(|| self.min_by_model.get(model).copied())
            .unwrap_or(0)
            .max(self.config.unit.max(1))
    }

    fn live(config: &UnitPrefixConfig, e: &Entry, now: u64) -> bool {
        e.visible_at <= now
            && now.saturating_sub(e.last_used) <= config.idle_ttl.as_millis() as u64
            && now.saturating_sub(e.written_at) <= config.max_age.as_millis() as u64
    }
}

impl CacheModel for UnitPrefixCache {
    fn name(&self) -> &str {
        &self.name
    }

    /// Neither DeepSeek nor Gemini's implicit cache charges for writes.
    fn charges_writes(&self) -> bool {
        false
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let now = req.sent_at_ms;
        let unit = self.config.unit.max(1);
        let min = self.min_tokens(&req.model);
        let others = self.models.any_other(&req.model);
        let st = self.streams.stream(&req.stream);
        let departure = st.advance(req, unit as usize).departure;
        let prompt = st.cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let whole = prompt / unit * unit;
        let Some(state) = self.models.get_mut(&req.model) else {
            if prompt >= min {
                outcome.write_5m_tokens = whole;
            }
            outcome.uncached_input_tokens = prompt - outcome.write_5m_tokens;
            outcome.stop = st
                .cursor
                .stop_at(req.segments.len(), 0, common::cold_reason(others));
            return outcome;
        };
        let hashes = st.block_hashes(unit as usize);
        let mut live_units = 0usize;
        while live_units < hashes.len()
            && state
                .units
                .get(&hashes[live_units])
                .is_some_and(|e| Self::live(&self.config, e, now))
        {
            live_units += 1;
        }
        let mut raw_units = live_units;
        while raw_units < hashes.len() && state.units.contains_key(&hashes[raw_units]) {
            raw_units += 1;
        }
        let in_flight = raw_units > live_units && state.units[&hashes[live_units]].visible_at > now;
        let live = live_units as u64 * unit;
        let cached = if live >= min { live } else { 0 };
        if cached > 0 {
            for h in &hashes[..live_units] {
                if let Some(e) = state.units.get_mut(h) {
                    e.last_used = now;
                }
            }
        }
        outcome.cached_tokens = cached;
        if prompt >= min {
            outcome.write_5m_tokens = whole.saturating_sub(cached);
        }
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let seen = state.seen.matches_from(&st.cursor, now, &mut st.seen);
        let below_min = cached == 0 && (prompt < min || live > 0);
        outcome.stop = common::automatic_stop(
            &st.cursor,
            cached,
            live,
            raw_units as u64 * unit,
            in_flight,
            below_min,
            seen,
            unit,
            BreakReason::TtlExpired,
            st.cursor.departure_stop(departure),
        );
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, visible_at: u64, completed: u64) {
        let now = req.sent_at_ms;
        let unit = self.config.unit.max(1);
        let min = self.min_tokens(&req.model);
        let build = self.config.build_delay.as_millis() as u64;
        let state = self
            .models
            .get_or_insert_with(&req.model, ModelState::default);
        let st = self.streams.stream(&req.stream);
        st.advance(req, unit as usize);
        let n = req.segments.len();
        state
            .seen
            .record_seen_from(st.cursor.hashes(), n, &mut st.seen);
        let prompt = st.cursor.total();
        if prompt < min {
            return;
        }
        let prompt_ready = visible_at.saturating_add(build);
        let reply_ready = completed.saturating_add(build);
        // Generated tokens follow the prompt in the cache: reasoning first, then the visible
        // reply. The next prompt repeats the reply but not the reasoning, so after reasoning
        // nothing past the prompt can match: only a reasoning-free reply extends the entry.
        let visible: u64 = req.reply.iter().map(|s| s.len() as u64).sum();
        if self.config.cache_reply && req.output_tokens <= visible {
            st.cursor.extend(&req.reply);
        }
        let prompt_units = (prompt / unit) as usize;
        let idle = self.config.idle_ttl.as_millis() as u64;
        let max_age = self.config.max_age.as_millis() as u64;
        for (i, h) in st.block_hashes(unit as usize).iter().enumerate() {
            let ready = if i < prompt_units {
                prompt_ready
            } else {
                reply_ready
            };
            match state.units.get_mut(h) {
                Some(e)
                    if now.saturating_sub(e.last_used) <= idle
                        && now.saturating_sub(e.written_at) <= max_age =>
                {
                    e.visible_at = e.visible_at.min(ready);
                    e.last_used = e.last_used.max(now);
                }
                _ => {
                    state.units.insert(
                        *h,
                        Entry {
                            visible_at: ready,
                            written_at: ready,
                            last_used: ready,
                        },
                    );
                }
            }
        }
        let all = st.cursor.len();
        let hashes = st.cursor.hashes();
        state.seen.record_continued_from(hashes, all, &mut st.seen);
        state
            .seen
            .record_stored_from(hashes, (0, n), prompt_ready, &mut st.seen);
        state
            .seen
            .record_stored_from(hashes, (n, all), reply_ready, &mut st.seen);
    }
}
