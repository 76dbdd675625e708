//! OpenAI automatic prompt caching for models before GPT-5.6 (docs/cache-models.md, *openai*; OpenAI
//! prompt-caching guide).
//!
//! - Automatic: every prompt of at least `min_tokens` (1,024) is cached; shorter prompts read and
//!   write nothing (O1).
//! - Hits come in `increment` (128) token steps: a hit is the longest cached prefix rounded down
//!   to a multiple of 128, and 0 below 1,024 (O2; doc example 2,006 → 1,920).
//! - Retention `in_memory`: entries expire after `idle_ttl` without use (default 10 min, the top
//!   of the documented 5–10 min) and at most `max_age` (1 h) after their last use: OpenAI (and
//!   Azure OpenAI) describe removal "within one hour of the cache's last use", so a prefix used
//!   every few minutes stays (`max_age_from = "last-use"`, the default). The older reading,
//!   1 h after the first write however often it is used, is `max_age_from = "first-write"`.
//!   `24h` retention is `idle_ttl = max_age = 24h` (O4). A hit refreshes the entry.
//! - Writes are free; the read discount is the model's `read` multiplier (O5).
//! - What was generated is cached once the request completes, after the prompt: reasoning, then
//!   the visible reply. The next prompt repeats the reply but not the reasoning, so after a reply
//!   with reasoning the hit ends at the previous prompt; without reasoning it reaches through the
//!   reply (§8, Codex rollouts).
//! - Routing to replicas (O3) is not modelled: one machine, so this is the best case; §8 notes
//!   real hits are sometimes one or two blocks shorter.
//!
//! Cost per request is what it adds. A request refreshes every block of its path (prompt and
//! output); instead of stamping each block, each stream keeps its path and the time it last
//! touched it, and a block's last use is the later of its own stamp and the touches of the
//! paths that hold it. A stream stamps the blocks its path lets go. While the stream's own
//! touch is recent enough, its path is live without probing it, and a request probes only the
//! blocks past it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::common::{self, HashKeyed, SeenPrefixes};
use super::cursor::{automatic_stop, AutoStream, ByName, Streams};
use super::{BreakReason, CacheModel, CacheOutcome};
use crate::prompt::Request;
use crate::util::duration_str;

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
    /// Entries are gone this long after `max_age_from` at the latest.
    #[serde(with = "duration_str")]
    pub max_age: Duration,
    /// What `max_age` counts from: the entry's last use (`last-use`, OpenAI's and Azure's
    /// wording) or its first write (`first-write`).
    pub max_age_from: AgeFrom,
}

/// The moment an OpenAI cache entry's maximum age counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgeFrom {
    /// From the entry's last use (OpenAI's and Azure's wording; the default).
    LastUse,
    /// From the entry's first write.
    FirstWrite,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            min_tokens: 1024,
            increment: 128,
            idle_ttl: Duration::from_secs(10 * 60),
            max_age: Duration::from_secs(60 * 60),
            max_age_from: AgeFrom::LastUse,
        }
    }
}

impl super::Section for OpenAiConfig {
    fn check(&self) -> Result<(), super::CacheError> {
        if self.increment == 0 {
            return Err(super::CacheError::Zero { key: "increment" });
        }
        Ok(())
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
    /// When the block becomes readable: the request's `visible_at` for prompt blocks, its
    /// completion for generated ones.
    visible_at: u64,
    /// When the block was written anew: `max_age` counts from here under `first-write`.
    written_at: u64,
    /// Last use stamped on the block itself (see the module doc for the touches kept per path).
    last_used: u64,
}

#[derive(Debug)]
struct ModelState {
    /// The model's entries by chained block hash.
    blocks: HashKeyed<u64, Entry>,
    /// What was stored and seen, to explain breaks.
    seen: SeenPrefixes,
    /// Latest send time at which an expired entry was written anew: a stream whose clock is
    /// behind it cannot trust that its path was left alone.
    rewritten_at: u64,
}

/// A stream's cursor and its path: the leading `path` blocks of the cursor, last touched at
/// `touched_at` on model `model`, all readable from `path_vis` on.
#[derive(Debug, Default)]
struct StreamState {
    /// The stream's cursor, block hashes and seen memo.
    auto: AutoStream,
    /// The model its last request ran on.
    model: String,
    /// Leading blocks of the cursor the stream last touched.
    path: usize,
    /// When it touched them (ms): a block's last use is at least this.
    touched_at: u64,
    /// The latest `visible_at` among those blocks: the path is readable from then on.
    path_vis: u64,
}

/// The legacy OpenAI automatic cache.
#[derive(Debug)]
pub struct OpenAiCache {
    /// The parameters it runs with.
    config: OpenAiConfig,
    /// Each model's entries (prompt caches are per model).
    models: ByName<ModelState>,
    /// Each stream's cursor and path.
    streams: Streams<StreamState>,
    /// Hands out the ids of reasoning tokens, unique across requests.
    reasoning: common::ReasoningIds,
}

/// Stamps the touch of `st`'s path on the blocks in `range` of it.
fn stamp(state: Option<&mut ModelState>, st: &StreamState, range: std::ops::Range<usize>) {
    let Some(state) = state else { return };
    for h in &st.auto.blocks()[range] {
        if let Some(e) = state.blocks.get_mut(h) {
            e.last_used = e.last_used.max(st.touched_at);
        }
    }
}

impl OpenAiCache {
    /// An empty cache with these parameters.
    pub fn new(config: OpenAiConfig) -> Self {
        OpenAiCache {
            config,
            models: ByName::default(),
            streams: Streams::default(),
            reasoning: common::ReasoningIds::default(),
        }
    }

    /// Takes the state of `req`'s stream out and moves it to `req`, stamping the blocks its
    /// path lets go.
    fn take_stream(&mut self, req: &Request) -> (StreamState, super::cursor::Advance) {
        let unit = self.config.increment.max(1) as usize;
        let mut st = std::mem::take(self.streams.stream(&req.stream));
        if st.model != req.model {
            stamp(self.models.get_mut(&st.model), &st, 0..st.path);
            st.path = 0;
            st.model = req.model.clone();
        }
        let mut dropped = Vec::new();
        let adv = st.auto.advance_dropping(req, unit, &mut dropped);
        let kept = st.auto.blocks().len();
        if st.path > kept {
            if let Some(state) = self.models.get_mut(&st.model) {
                for h in &dropped[..st.path - kept] {
                    if let Some(e) = state.blocks.get_mut(h) {
                        e.last_used = e.last_used.max(st.touched_at);
                    }
                }
            }
            st.path = kept;
        }
        (st, adv)
    }

    /// Makes the leading `len` blocks of `st` its path, touched at `now`.
    fn retouch(&mut self, st: &mut StreamState, len: usize, now: u64) {
        let state = self.models.get_mut(&st.model);
        if now < st.touched_at {
            stamp(state, st, 0..st.path);
        } else if len < st.path {
            stamp(state, st, len..st.path);
        }
        st.path = len;
        st.touched_at = now;
    }

    /// Block `h`, the `p`-th of a path of stream `st`, on `model`: its last use counting the
    /// touches of every path that holds it.
    fn last_used(&self, st: &StreamState, e: &Entry, p: usize, h: u64) -> u64 {
        let mut t = e.last_used;
        let mut take = |o: &StreamState| {
            if o.path > p && o.model == st.model && o.auto.blocks()[p] == h {
                t = t.max(o.touched_at);
            }
        };
        take(st);
        for o in self.streams.values() {
            take(o);
        }
        t
    }

    /// Whether an entry last used at `used` has not expired at `now`.
    fn kept(&self, e: &Entry, used: u64, now: u64) -> bool {
        let idle = self.config.idle_ttl.as_millis() as u64;
        let max_age = self.config.max_age.as_millis() as u64;
        let from = match self.config.max_age_from {
            AgeFrom::LastUse => used,
            AgeFrom::FirstWrite => e.written_at,
        };
        now.saturating_sub(used) <= idle && now.saturating_sub(from) <= max_age
    }

    /// The stream's path is unexpired at `now` without looking at its blocks: its own touch is
    /// recent enough and nothing rewrote a block of it since.
    fn path_kept(&self, st: &StreamState, now: u64) -> bool {
        let window = self.config.idle_ttl.min(self.config.max_age).as_millis() as u64;
        self.config.max_age_from == AgeFrom::LastUse
            && now >= st.touched_at
            && now - st.touched_at <= window
            && self
                .models
                .iter()
                .find(|(m, _)| *m == st.model)
                .is_some_and(|(_, s)| s.rewritten_at <= now)
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
        let (mut st, adv) = self.take_stream(req);
        let departure = adv.departure;
        let prompt = st.auto.cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        if !self.models.contains(&req.model) {
            // Cold: the prompt is written (free) if long enough.
            let outcome = st
                .auto
                .first_for_model(req, self.config.min_tokens, unit, others);
            *self.streams.stream(&req.stream) = st;
            return outcome;
        }
        st.auto.block_hashes(unit as usize);
        let hashes = st.auto.blocks();
        let state = self.models.get_mut(&req.model).expect("model present");
        let blocks = std::mem::take(&mut state.blocks);
        // The stream's own path is live as a whole while its touch is recent; probe past it.
        let mut live_blocks = if self.path_kept(&st, now) && st.path_vis <= now {
            st.path.min(hashes.len())
        } else {
            0
        };
        while live_blocks < hashes.len()
            && blocks.get(&hashes[live_blocks]).is_some_and(|e| {
                e.visible_at <= now
                    && self.kept(
                        e,
                        self.last_used(&st, e, live_blocks, hashes[live_blocks]),
                        now,
                    )
            })
        {
            live_blocks += 1;
        }
        let mut raw_blocks = live_blocks;
        while raw_blocks < hashes.len() && blocks.contains_key(&hashes[raw_blocks]) {
            raw_blocks += 1;
        }
        let in_flight = raw_blocks > live_blocks && blocks[&hashes[live_blocks]].visible_at > now;
        let state = self.models.get_mut(&req.model).expect("model present");
        state.blocks = blocks;
        let live = live_blocks as u64 * unit;
        let cached = if live >= self.config.min_tokens {
            live
        } else {
            0
        };
        if cached > 0 {
            // A hit refreshes the blocks it read; they are all readable now.
            let vis = if live_blocks <= st.path {
                st.path_vis
            } else {
                st.path_vis.max(now)
            };
            self.retouch(&mut st, live_blocks, now);
            st.path_vis = vis;
        }
        outcome.cached_tokens = cached;
        if prompt >= self.config.min_tokens {
            outcome.write_5m_tokens = (prompt / unit * unit).saturating_sub(cached);
        }
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let state = self.models.get_mut(&req.model).expect("model present");
        let seen = state
            .seen
            .matches_from(&st.auto.cursor, now, &mut st.auto.seen);
        let below_min = cached == 0 && (prompt < self.config.min_tokens || live > 0);
        outcome.stop = automatic_stop(
            &st.auto.cursor,
            cached,
            live,
            raw_blocks as u64 * unit,
            in_flight,
            below_min,
            seen,
            unit,
            BreakReason::TtlExpired,
            st.auto.cursor.departure_stop(departure),
        );
        *self.streams.stream(&req.stream) = st;
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, visible_at: u64, completed: u64) {
        let now = req.sent_at_ms;
        let unit = self.config.increment.max(1);
        self.models.get_or_insert_with(&req.model, || ModelState {
            blocks: HashKeyed::default(),
            seen: SeenPrefixes::default(),
            rewritten_at: 0,
        });
        let (mut st, _) = self.take_stream(req);
        let n = req.segments.len();
        let prompt = st.auto.cursor.total();
        {
            let state = self.models.get_mut(&req.model).expect("model present");
            state
                .seen
                .record_seen_from(st.auto.cursor.hashes(), n, &mut st.auto.seen);
        }
        if prompt < self.config.min_tokens {
            *self.streams.stream(&req.stream) = st;
            return;
        }
        st.auto.cursor.extend_generated(&mut self.reasoning, req);
        st.auto.block_hashes(unit as usize);
        let prompt_blocks = (prompt / unit) as usize;
        // The stream's own path is unexpired as a whole, and readable by `visible_at`: only
        // the blocks past it are looked at.
        let from = if self.path_kept(&st, now) && st.path_vis <= visible_at {
            st.path.min(st.auto.blocks().len())
        } else {
            0
        };
        let mut path_vis = if from > 0 { st.path_vis } else { 0 };
        let state = self.models.get_mut(&req.model).expect("model present");
        let mut blocks = std::mem::take(&mut state.blocks);
        let mut rewritten = false;
        for (i, h) in st.auto.blocks().iter().enumerate().skip(from) {
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
            match blocks.get_mut(h) {
                Some(e) => {
                    let used = self.last_used(&st, e, i, *h);
                    if self.kept(e, used, now) {
                        e.visible_at = e.visible_at.min(vis);
                    } else {
                        *e = fresh;
                        rewritten = true;
                    }
                    path_vis = path_vis.max(e.visible_at);
                }
                None => {
                    blocks.insert(*h, fresh);
                    path_vis = path_vis.max(vis);
                }
            }
        }
        let state = self.models.get_mut(&req.model).expect("model present");
        state.blocks = blocks;
        if rewritten {
            state.rewritten_at = state.rewritten_at.max(now);
        }
        let len = st.auto.blocks().len();
        self.retouch(&mut st, len, now);
        st.path_vis = path_vis;
        let state = self.models.get_mut(&req.model).expect("model present");
        let all = st.auto.cursor.len();
        let hashes = st.auto.cursor.hashes();
        state
            .seen
            .record_continued_from(hashes, all, &mut st.auto.seen);
        state
            .seen
            .record_stored_from(hashes, (0, n), visible_at, &mut st.auto.seen);
        state
            .seen
            .record_stored_from(hashes, (n, all), completed, &mut st.auto.seen);
        *self.streams.stream(&req.stream) = st;
    }
}
