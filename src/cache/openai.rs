//! OpenAI automatic prompt caching for models before GPT-5.6 (CACHE_SEMANTICS.md §2, OpenAI
//! prompt-caching guide).
//!
//! - Automatic: every prompt of at least `min_tokens` (1,024) is cached; shorter prompts read and
//!   write nothing (O1).
//! - Hits come in `increment` (128) token steps: a hit is the longest cached prefix rounded down
//!   to a multiple of 128, and 0 below 1,024 (O2; doc example 2,006 → 1,920).
//! - Retention `in_memory`: entries expire after `idle_ttl` without use (default 10 min, the top
//!   of the documented 5–10 min) and at most `max_age` after they were written (1 h); `24h`
//!   retention is `idle_ttl = max_age = 24h` (O4). A hit refreshes the idle timer.
//! - Writes are free; the read discount is the model's `read` multiplier (O5).
//! - The visible reply is cached once the request completes, so the next prompt, which repeats
//!   it, can hit through it; reasoning tokens are not part of it (§8, Codex rollouts).
//! - Routing to replicas (O3) is not modelled: one machine, so this is the best case; §8 notes
//!   real hits are sometimes one or two blocks shorter.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::common::{self, HashKeyed, SeenPrefixes};
use super::cursor::{AutoStream, ByName, Streams};
use super::{BreakReason, CacheModel, CacheOutcome};
use crate::prompt::Request;
use crate::scenario::format::duration_str;

/// Parameters of the legacy OpenAI cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpenAiConfig {
    /// Nothing is cached below this prompt length.
    pub min_tokens: u64,
    /// Hits are multiples of this many tokens.
    pub increment: u64,
    /// Entries unused for this long are gone.
    #[serde(with = "duration_str")]
    pub idle_ttl: Duration,
    /// Entries older than this are gone, used or not.
    #[serde(with = "duration_str")]
    pub max_age: Duration,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            min_tokens: 1024,
            increment: 128,
            idle_ttl: Duration::from_secs(10 * 60),
            max_age: Duration::from_secs(60 * 60),
        }
    }
}

impl OpenAiConfig {
    /// `prompt_cache_retention = "24h"`.
    pub fn extended_24h() -> Self {
        OpenAiConfig {
            idle_ttl: Duration::from_secs(24 * 3600),
            max_age: Duration::from_secs(24 * 3600),
            ..Self::default()
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    visible_at: u64,
    written_at: u64,
    last_used: u64,
}

#[derive(Debug)]
struct ModelState {
    blocks: HashKeyed<u64, Entry>,
    seen: SeenPrefixes,
}

/// The legacy OpenAI automatic cache.
#[derive(Debug)]
pub struct OpenAiCache {
    config: OpenAiConfig,
    models: ByName<ModelState>,
    streams: Streams<AutoStream>,
}

impl OpenAiCache {
    pub fn new(config: OpenAiConfig) -> Self {
        OpenAiCache {
            config,
            models: ByName::default(),
            streams: Streams::default(),
        }
    }

    fn live(config: &OpenAiConfig, e: &Entry, now: u64) -> bool {
        e.visible_at <= now
            && now.saturating_sub(e.last_used) <= config.idle_ttl.as_millis() as u64
            && now.saturating_sub(e.written_at) <= config.max_age.as_millis() as u64
    }
}

impl CacheModel for OpenAiCache {
    fn name(&self) -> &str {
        "openai"
    }

    fn charges_writes(&self) -> bool {
        false
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let now = req.sent_at_ms;
        let unit = self.config.increment.max(1);
        let others = self.models.any_other(&req.model);
        let st = self.streams.stream(&req.stream);
        let departure = st.advance(req, unit as usize).departure;
        let prompt = st.cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let Some(state) = self.models.get_mut(&req.model) else {
            // Cold: the prompt is written (free) if long enough.
            if prompt >= self.config.min_tokens {
                outcome.write_5m_tokens = prompt / unit * unit;
            }
            outcome.uncached_input_tokens = prompt - outcome.write_5m_tokens;
            outcome.stop = st
                .cursor
                .stop_at(req.segments.len(), 0, common::cold_reason(others));
            return outcome;
        };
        let hashes = st.block_hashes(unit as usize);
        let mut live_blocks = 0usize;
        while live_blocks < hashes.len()
            && state
                .blocks
                .get(&hashes[live_blocks])
                .is_some_and(|e| Self::live(&self.config, e, now))
        {
            live_blocks += 1;
        }
        let mut raw_blocks = live_blocks;
        while raw_blocks < hashes.len() && state.blocks.contains_key(&hashes[raw_blocks]) {
            raw_blocks += 1;
        }
        let in_flight =
            raw_blocks > live_blocks && state.blocks[&hashes[live_blocks]].visible_at > now;
        let live = live_blocks as u64 * unit;
        let cached = if live >= self.config.min_tokens {
            live
        } else {
            0
        };
        if cached > 0 {
            for h in &hashes[..live_blocks] {
                if let Some(e) = state.blocks.get_mut(h) {
                    e.last_used = now;
                }
            }
        }
        outcome.cached_tokens = cached;
        if prompt >= self.config.min_tokens {
            outcome.write_5m_tokens = (prompt / unit * unit).saturating_sub(cached);
        }
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let seen = state.seen.matches_from(&st.cursor, now, &mut st.seen);
        let below_min = cached == 0 && (prompt < self.config.min_tokens || live > 0);
        outcome.stop = common::automatic_stop(
            &st.cursor,
            cached,
            live,
            raw_blocks as u64 * unit,
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
        let unit = self.config.increment.max(1);
        let state = self.models.get_or_insert_with(&req.model, || ModelState {
            blocks: HashKeyed::default(),
            seen: SeenPrefixes::default(),
        });
        let st = self.streams.stream(&req.stream);
        st.advance(req, unit as usize);
        let n = req.segments.len();
        state
            .seen
            .record_seen_from(st.cursor.hashes(), n, &mut st.seen);
        let prompt = st.cursor.total();
        if prompt < self.config.min_tokens {
            return;
        }
        st.cursor.extend(&req.reply);
        let prompt_blocks = (prompt / unit) as usize;
        let idle = self.config.idle_ttl.as_millis() as u64;
        let max_age = self.config.max_age.as_millis() as u64;
        for (i, h) in st.block_hashes(unit as usize).iter().enumerate() {
            let vis = if i < prompt_blocks {
                visible_at
            } else {
                completed
            };
            let fresh = Entry {
                visible_at: vis,
                written_at: vis,
                last_used: vis,
            };
            match state.blocks.get_mut(h) {
                Some(e)
                    if now.saturating_sub(e.last_used) <= idle
                        && now.saturating_sub(e.written_at) <= max_age =>
                {
                    e.visible_at = e.visible_at.min(vis);
                    e.last_used = e.last_used.max(now);
                }
                _ => {
                    state.blocks.insert(*h, fresh);
                }
            }
        }
        let all = st.cursor.len();
        let hashes = st.cursor.hashes();
        state.seen.record_continued_from(hashes, all, &mut st.seen);
        state
            .seen
            .record_stored_from(hashes, (0, n), visible_at, &mut st.seen);
        state
            .seen
            .record_stored_from(hashes, (n, all), completed, &mut st.seen);
    }
}
