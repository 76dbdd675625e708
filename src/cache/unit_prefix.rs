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

use super::common::{self, work, HashKeyed, SeenPrefixes};
use super::cursor::{automatic_stop, same_name, AutoStream, ByName, Streams};
use super::{BreakReason, CacheModel, CacheOutcome, PriceTable};
use crate::prompt::Request;
use crate::util::duration_str;

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
    /// When the entry becomes readable (its build is done).
    visible_at: u64,
    /// When the entry was (last) written anew: `max_age` counts from here.
    written_at: u64,
    /// Last use stamped on the entry itself; the touches of the stream paths holding it count
    /// too (see [`StreamState`]).
    last_used: u64,
}

#[derive(Debug, Default)]
struct ModelState {
    /// Entries by chained hash of the units from token 0 up to and including theirs.
    units: HashKeyed<u64, Entry>,
    /// What was stored and seen, to explain breaks.
    seen: SeenPrefixes,
}

/// (`written_at`, an upper bound of `visible_at`) of each entry of a stream's path, in a
/// segment tree of (earliest write, latest visibility), so that a walk over the path jumps
/// straight to the next entry that may have aged out or may not be readable yet.
#[derive(Debug, Default)]
struct PathBounds {
    /// Positions held (the path's length).
    len: usize,
    /// Leaves start at `cap` (a power of two); node `k` joins nodes `2k` and `2k + 1`.
    cap: usize,
    /// The tree, `2 * cap` nodes.
    nodes: Vec<(u64, u64)>,
}

/// A leaf past the end: never needs a look.
const NO_BOUNDS: (u64, u64) = (u64::MAX, 0);

fn join(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    (a.0.min(b.0), a.1.max(b.1))
}

impl PathBounds {
    fn push(&mut self, v: (u64, u64)) {
        if self.len == self.cap {
            let cap = (self.cap * 2).max(64);
            let mut nodes = vec![NO_BOUNDS; 2 * cap];
            nodes[cap..cap + self.len].copy_from_slice(&self.nodes[self.cap..self.cap + self.len]);
            for k in (1..cap).rev() {
                nodes[k] = join(nodes[2 * k], nodes[2 * k + 1]);
            }
            work::add(cap as u64);
            self.cap = cap;
            self.nodes = nodes;
        }
        self.len += 1;
        self.set(self.len - 1, v);
    }

    fn set(&mut self, i: usize, v: (u64, u64)) {
        let mut k = self.cap + i;
        self.nodes[k] = v;
        while k > 1 {
            k /= 2;
            self.nodes[k] = join(self.nodes[2 * k], self.nodes[2 * k + 1]);
            work::add(1);
        }
    }

    fn truncate(&mut self, n: usize) {
        while self.len > n {
            self.len -= 1;
            self.set(self.len, NO_BOUNDS);
        }
    }

    /// The first position from `from` on whose bounds `look` says need a look (`look` of a
    /// join must hold when it holds for either part).
    fn first_from(&self, from: usize, look: &impl Fn((u64, u64)) -> bool) -> Option<usize> {
        (from < self.len)
            .then(|| self.find(1, (0, self.cap), from, look))
            .flatten()
            .filter(|&i| i < self.len)
    }

    fn find(
        &self,
        k: usize,
        (lo, hi): (usize, usize),
        from: usize,
        look: &impl Fn((u64, u64)) -> bool,
    ) -> Option<usize> {
        if hi <= from || !look(self.nodes[k]) {
            return None;
        }
        work::add(1);
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.find(2 * k, (lo, mid), from, look)
            .or_else(|| self.find(2 * k + 1, (mid, hi), from, look))
    }
}

/// A stream's cursor and its path: the leading `path` units of the cursor's block hashes are
/// entries of model `model` that this stream last touched (hit or stored) at `touched_at`.
/// Instead of stamping every unit of the path on every request, the touch is kept here and
/// counts into the last use of each entry the path holds (the later of the entry's own stamp
/// and the touches of the paths holding it); the stream stamps the entries its path lets go,
/// and a store that writes an expired entry anew cuts every other path holding it first.
#[derive(Debug, Default)]
struct StreamState {
    /// The stream's previous segments, their hashes and unit hashes.
    auto: AutoStream,
    /// Model the path's entries belong to.
    model: String,
    /// Units of the path.
    path: usize,
    /// Latest touch of the path.
    touched_at: u64,
    /// Write time and readability bound of each entry of the path.
    bounds: PathBounds,
}

impl StreamState {
    /// Shortens the path to `len` units, stamping its touch on the entries it lets go.
    fn cut(&mut self, units: &mut HashKeyed<u64, Entry>, len: usize) {
        if len < self.path {
            stamp(units, self, len..self.path);
            self.path = len;
            self.bounds.truncate(len);
        }
    }
}

/// The cache's stream states and one model's entries, borrowed apart from each other.
struct Parts<'a> {
    config: &'a UnitPrefixConfig,
    streams: &'a mut Streams<StreamState>,
    units: &'a mut HashKeyed<u64, Entry>,
}

/// Stamps the touch of `st`'s path on its entries in `range`.
fn stamp(units: &mut HashKeyed<u64, Entry>, st: &StreamState, range: std::ops::Range<usize>) {
    for h in &st.auto.blocks()[range] {
        if let Some(e) = units.get_mut(h) {
            e.last_used = e.last_used.max(st.touched_at);
        }
    }
}

impl Parts<'_> {
    fn idle(&self) -> u64 {
        self.config.idle_ttl.as_millis() as u64
    }

    fn max_age(&self) -> u64 {
        self.config.max_age.as_millis() as u64
    }

    /// Entry `e`, unit `p` of stream `st`'s cursor with hash `h`: its last use, counting the
    /// touches of every path holding it.
    fn last_used(&self, st: &StreamState, e: &Entry, p: usize, h: u64) -> u64 {
        let mut t = e.last_used;
        let mut take = |o: &StreamState| {
            work::add(1);
            if o.path > p && same_name(&o.model, &st.model) && o.auto.blocks()[p] == h {
                t = t.max(o.touched_at);
            }
        };
        take(st);
        for o in self.streams.values() {
            take(o);
        }
        t
    }

    /// Whether entry `e` (unit `p` of `st`, hash `h`) has neither idled out nor aged out at
    /// `now`.
    fn unexpired(&self, st: &StreamState, e: &Entry, p: usize, h: u64, now: u64) -> bool {
        now.saturating_sub(e.written_at) <= self.max_age()
            && (now.saturating_sub(e.last_used) <= self.idle()
                || now.saturating_sub(self.last_used(st, e, p, h)) <= self.idle())
    }

    /// How far into `st`'s path the entries are known not to have idled out at `now` without
    /// looking at them: all of it while the path's touch is recent, else none.
    fn fresh_path(&self, st: &StreamState, now: u64, len: usize) -> usize {
        if now.saturating_sub(st.touched_at) <= self.idle() {
            st.path.min(len)
        } else {
            0
        }
    }

    /// Before entry `h`, unit `p` of `st`'s model, is written anew: every other path holding
    /// it ends before it.
    fn cut_others(&mut self, st: &StreamState, p: usize, h: u64) {
        for o in self.streams.values_mut() {
            work::add(1);
            if o.path > p && same_name(&o.model, &st.model) && o.auto.blocks()[p] == h {
                o.cut(self.units, p);
            }
        }
    }
}

/// An automatic cache of whole token units from token 0, writes free.
#[derive(Debug)]
pub struct UnitPrefixCache {
    /// Name as `--cache` gives it (`gemini`, `deepseek`).
    name: String,
    /// The cache's parameters.
    config: UnitPrefixConfig,
    /// The price table's minimum cacheable prompt per model.
    min_by_model: HashMap<String, u64>,
    /// Entries and explanation records per model.
    models: ByName<ModelState>,
    /// Per-stream cursors and paths.
    streams: Streams<StreamState>,
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

    /// Takes the state of `req`'s stream out and moves it to `req`, stamping the entries its
    /// path lets go.
    fn take_stream(&mut self, req: &Request) -> (StreamState, super::cursor::Advance) {
        let unit = self.config.unit.max(1) as usize;
        let mut st = std::mem::take(self.streams.stream(&req.stream));
        if !same_name(&st.model, &req.model) {
            if let Some(state) = self.models.get_mut(&st.model) {
                st.cut(&mut state.units, 0);
            }
            st.path = 0;
            st.bounds.truncate(0);
            st.model = req.model.clone();
        }
        let mut dropped = Vec::new();
        let adv = st.auto.advance_dropping(req, unit, &mut dropped);
        let kept = st.auto.blocks().len();
        if st.path > kept {
            if let Some(state) = self.models.get_mut(&st.model) {
                for h in &dropped[..st.path - kept] {
                    if let Some(e) = state.units.get_mut(h) {
                        e.last_used = e.last_used.max(st.touched_at);
                    }
                }
            }
            st.path = kept;
            st.bounds.truncate(kept);
        }
        (st, adv)
    }

    /// The parts of the cache for `model`, whose state must exist.
    fn parts(&mut self, model: &str) -> (Parts<'_>, &mut SeenPrefixes) {
        let state = self.models.get_mut(model).expect("model state exists");
        (
            Parts {
                config: &self.config,
                streams: &mut self.streams,
                units: &mut state.units,
            },
            &mut state.seen,
        )
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
        let (mut st, adv) = self.take_stream(req);
        let prompt = st.auto.cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        if !self.models.contains(&req.model) {
            if prompt >= min {
                outcome.write_5m_tokens = prompt / unit * unit;
            }
            outcome.uncached_input_tokens = prompt - outcome.write_5m_tokens;
            outcome.stop =
                st.auto
                    .cursor
                    .stop_at(req.segments.len(), 0, common::cold_reason(others));
            *self.streams.stream(&req.stream) = st;
            return outcome;
        }
        st.auto.block_hashes(unit as usize);
        let (mut parts, seen_records) = self.parts(&req.model);
        let (live_units, in_flight, tail) = parts.live_prefix(&mut st, now);
        let live = live_units as u64 * unit;
        let cached = if live >= min { live } else { 0 };
        if cached > 0 {
            // A hit refreshes the units it read: they become the path, touched now.
            parts.retouch(&mut st, live_units, now, tail);
        }
        outcome.cached_tokens = cached;
        if prompt >= min {
            outcome.write_5m_tokens = (prompt / unit * unit).saturating_sub(cached);
        }
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let seen = seen_records.matches_from(&st.auto.cursor, now, &mut st.auto.seen);
        let below_min = cached == 0 && (prompt < min || live > 0);
        let raw = live_units + usize::from(in_flight.is_some());
        outcome.stop = automatic_stop(
            &st.auto.cursor,
            cached,
            live,
            raw as u64 * unit,
            in_flight == Some(true),
            below_min,
            seen,
            unit,
            BreakReason::TtlExpired,
            st.auto.cursor.departure_stop(adv.departure),
        );
        *self.streams.stream(&req.stream) = st;
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, visible_at: u64, completed: u64) {
        let now = req.sent_at_ms;
        let unit = self.config.unit.max(1);
        let min = self.min_tokens(&req.model);
        let build = self.config.build_delay.as_millis() as u64;
        self.models
            .get_or_insert_with(&req.model, ModelState::default);
        let (mut st, _) = self.take_stream(req);
        let n = req.segments.len();
        let (mut parts, seen_records) = self.parts(&req.model);
        seen_records.record_seen_from(st.auto.cursor.hashes(), n, &mut st.auto.seen);
        let prompt = st.auto.cursor.total();
        if prompt >= min {
            let ready = (
                visible_at.saturating_add(build),
                completed.saturating_add(build),
            );
            // Generated tokens follow the prompt in the cache: reasoning first, then the
            // visible reply. The next prompt repeats the reply but not the reasoning, so after
            // reasoning nothing past the prompt can match: only a reasoning-free reply extends
            // the entry.
            let visible: u64 = req.reply.iter().map(|s| s.len() as u64).sum();
            if parts.config.cache_reply && req.output_tokens <= visible {
                st.auto.cursor.extend(&req.reply);
            }
            st.auto.block_hashes(unit as usize);
            parts.write(&mut st, (prompt / unit) as usize, ready, now);
            let all = st.auto.cursor.len();
            let hashes = st.auto.cursor.hashes();
            seen_records.record_continued_from(hashes, all, &mut st.auto.seen);
            seen_records.record_stored_from(hashes, (0, n), ready.0, &mut st.auto.seen);
            seen_records.record_stored_from(hashes, (n, all), ready.1, &mut st.auto.seen);
        }
        *self.streams.stream(&req.stream) = st;
    }
}

impl Parts<'_> {
    /// Whether unit `p` of `st` (hash `h`) is cached and live at `now`, and its entry.
    fn live_at(&self, st: &StreamState, p: usize, now: u64) -> (bool, Option<Entry>) {
        let h = st.auto.blocks()[p];
        match self.units.get(&h) {
            Some(e) => (
                e.visible_at <= now && self.unexpired(st, e, p, h, now),
                Some(*e),
            ),
            None => (false, None),
        }
    }

    /// The leading units of `st`'s cursor that are live at `now`; whether the unit after them
    /// is cached but still being built (`Some(true)`), cached and expired (`Some(false)`) or
    /// absent (`None`); and the bounds of the live units past the stream's path. Within the
    /// path (while its touch is recent) only the entries whose bounds say they may have aged
    /// out or not be readable are looked at; past it, every unit.
    fn live_prefix(
        &mut self,
        st: &mut StreamState,
        now: u64,
    ) -> (usize, Option<bool>, Vec<(u64, u64)>) {
        let len = st.auto.blocks().len();
        let fresh = self.fresh_path(st, now, len);
        let max_age = self.max_age();
        let look = |(w, v): (u64, u64)| now.saturating_sub(w) > max_age || v > now;
        let mut live = 0;
        let mut tail = Vec::new();
        let mut stopped = None;
        while live < fresh {
            let Some(f) = st.bounds.first_from(live, &look).filter(|&f| f < fresh) else {
                live = fresh;
                break;
            };
            match self.live_at(st, f, now) {
                (true, Some(e)) => {
                    st.bounds.set(f, (e.written_at, e.visible_at));
                    live = f + 1;
                }
                (_, e) => {
                    live = f;
                    stopped = Some(e);
                    break;
                }
            }
        }
        let next = match stopped {
            Some(e) => e.map(|e| e.visible_at > now),
            None => loop {
                if live >= len {
                    break None;
                }
                match self.live_at(st, live, now) {
                    (true, Some(e)) => {
                        tail.push((e.written_at, e.visible_at));
                        live += 1;
                    }
                    (_, e) => break e.map(|e| e.visible_at > now),
                }
            },
        };
        if fresh == 0 {
            // The path's bounds were not used: the live units' bounds are all in `tail`.
            st.cut(self.units, 0);
        }
        (live, next, tail)
    }

    /// Makes `[0, len)` of `st`'s units its path, touched at `now` (the touches it already
    /// holds stay counted: stamped where the new touch does not cover them); `tail` holds the
    /// bounds of the units past the current path.
    fn retouch(&mut self, st: &mut StreamState, len: usize, now: u64, tail: Vec<(u64, u64)>) {
        if now < st.touched_at {
            stamp(self.units, st, 0..st.path);
        }
        st.cut(self.units, len);
        let from = st.path;
        for b in tail.into_iter().take(len.saturating_sub(from)) {
            st.bounds.push(b);
        }
        st.path = len;
        st.touched_at = now;
    }

    /// Stores unit `i` of `st` (hash `h`), readable from `r`, at `now`: an unexpired entry is
    /// refreshed (readable from the earlier time, used now), an expired or missing one written
    /// anew. Returns the entry's bounds.
    fn write_one(&mut self, st: &StreamState, i: usize, r: u64, now: u64) -> (u64, u64) {
        let h = st.auto.blocks()[i];
        let kept = match self.units.get(&h) {
            Some(e) => self.unexpired(st, e, i, h, now).then_some(*e),
            None => None,
        };
        let e = match kept {
            Some(mut e) => {
                e.visible_at = e.visible_at.min(r);
                e.last_used = e.last_used.max(now);
                e
            }
            None => {
                if self.units.contains_key(&h) {
                    self.cut_others(st, i, h);
                }
                Entry {
                    visible_at: r,
                    written_at: r,
                    last_used: r,
                }
            }
        };
        self.units.insert(h, e);
        (e.written_at, e.visible_at)
    }

    /// Stores the units of `st`'s cursor (the first `prompt_units` readable from `ready.0`, the
    /// rest from `ready.1`) at `now`. Within the stream's path (while its touch is recent) only
    /// the entries whose bounds say they may have aged out or be readable later than `ready.0`
    /// are looked at: the others' refresh is the path's new touch.
    fn write(&mut self, st: &mut StreamState, prompt_units: usize, ready: (u64, u64), now: u64) {
        let len = st.auto.blocks().len();
        // A touch at `now` may stand for the entries' own stamps when it is the stream's
        // latest and written entries are not stamped later than `now` would say (they are
        // stamped `ready`); otherwise every entry is stamped itself.
        let lazy = ready.0 >= now && ready.1 >= now && now >= st.touched_at;
        if !lazy {
            st.cut(self.units, 0);
        }
        let fresh = self.fresh_path(st, now, len);
        let max_age = self.max_age();
        let look = |(w, v): (u64, u64)| now.saturating_sub(w) > max_age || v > ready.0;
        let at = |i: usize| if i < prompt_units { ready.0 } else { ready.1 };
        let mut i = 0;
        while let Some(f) = st.bounds.first_from(i, &look).filter(|&f| f < fresh) {
            let b = self.write_one(st, f, at(f), now);
            st.bounds.set(f, b);
            i = f + 1;
        }
        let tail: Vec<(u64, u64)> = (fresh..len)
            .map(|i| self.write_one(st, i, at(i), now))
            .collect();
        if lazy {
            st.cut(self.units, fresh);
            self.retouch(st, len, now, tail);
        }
    }
}
