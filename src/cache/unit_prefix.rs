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
//!
//! What a request costs is what it adds, not its prompt's length: entries are one per unit but
//! grouped in runs written together (`unit_prefix/entries.rs`), each stream keeps its path over
//! them in pieces of one run (`unit_prefix/pieces.rs`) with the touches of its hits and stores
//! (see `StreamState`), and a run that aged out of `max_age` whole is written anew as one.

#[cfg(test)]
mod differential;
mod entries;
mod pieces;
#[cfg(test)]
mod reference;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::common::{work, SeenPrefixes};
use super::cursor::{automatic_stop, same_name, AutoStream, ByName, Streams};
use super::{BreakReason, CacheModel, CacheOutcome, PriceTable};
use crate::prompt::Request;
use crate::util::duration_str;
use entries::{Entries, Group, Near, Rules, Stored, Stretch, Vals};
use pieces::{join, push_unit, push_units, units_of, Pieces, Span, NO_BOUNDS};

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
    pub fn validate(&self) -> Result<(), super::CacheError> {
        if self.unit == 0 {
            return Err(super::CacheError::Zero { key: "unit" });
        }
        Ok(())
    }
}

impl super::Section for UnitPrefixConfig {
    fn check(&self) -> Result<(), super::CacheError> {
        self.validate()
    }
}

#[derive(Debug, Default)]
struct ModelState {
    /// Entries by chained hash of the units from token 0 up to and including theirs, in runs.
    entries: Entries,
    /// What was stored and seen, to explain breaks.
    seen: SeenPrefixes,
}

/// A stream's cursor and its path: the leading `path` units of the cursor's block hashes are
/// entries of model `model` that this stream last touched (hit or stored), at the times its
/// `touches` give. Instead of stamping every unit of the path on every request, the touch is kept here and
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
    /// Touches of the path, front to back: `(end, at)` says the units from the previous end
    /// (0 for the first) up to `end` were last touched by this stream at `at`. Ends increase
    /// to `path`, times do not increase: a touch covers a prefix and is the latest (a hit that
    /// stops short of the path touches its leading units only, and the rest keep their
    /// older touch instead of being stamped and cut off, which cost the length of the path).
    touches: VecDeque<(usize, u64)>,
    /// The path's units in pieces of one run each, with their write time and readability bound.
    pieces: Pieces,
    /// The stretches the last store's tail went over, in order: each one's run and the unit
    /// after it, found then holding the cursor's units (those ending past the units the
    /// cursor keeps are let go with them, and all on a change of model): the next store's
    /// walk tries them first.
    walked: Vec<(u32, usize)>,
    /// A buffer kept between requests: the spans of units a store's walk went over, which
    /// join the path (reused, so that a walk over thousands of runs does not grow a new list
    /// each request).
    spans: Vec<Span>,
    /// When the stream's previous store was sent (`None` before its first): a store after a
    /// gap longer than `idle_ttl` leaves the units it walks off the path (see
    /// [`Parts::write`]).
    stored_at: Option<u64>,
}

impl StreamState {
    /// Latest touch of the path (0 when it is empty).
    fn touched_at(&self) -> u64 {
        self.touches.front().map_or(0, |&(_, t)| t)
    }

    /// The touch of unit `p` of the path (`p < path`).
    fn touch_at(&self, p: usize) -> u64 {
        for &(end, t) in &self.touches {
            work::add(1);
            if p < end {
                return t;
            }
        }
        0
    }

    /// The leading units of the path whose touch is within `idle` of `now`.
    fn fresh_len(&self, now: u64, idle: u64) -> usize {
        let mut fresh = 0;
        for &(end, t) in &self.touches {
            work::add(1);
            if now.saturating_sub(t) > idle {
                break;
            }
            fresh = end;
        }
        fresh
    }

    /// The path's touches as (units, time) over `from..self.path`.
    fn touched_spans(&self, from: usize) -> Vec<(std::ops::Range<usize>, u64)> {
        let mut start = 0;
        let mut out = Vec::new();
        for &(end, t) in &self.touches {
            if end > from {
                out.push((start.max(from)..end, t));
            }
            start = end;
        }
        out
    }

    /// Shortens the path to `len` units, stamping its touches on the entries it lets go.
    fn cut(&mut self, entries: &mut Entries, len: usize) {
        if len < self.path {
            for (range, t) in self.touched_spans(len) {
                let hashes = &self.auto.blocks()[range.clone()];
                stamp(entries, &self.pieces, hashes, range.start, t);
            }
            self.truncate_touches(len);
            self.pieces.truncate(len);
        }
    }

    /// Ends the path at `len` units (at most its length) without stamping anything.
    fn truncate_touches(&mut self, len: usize) {
        while let Some(&(_, _)) = self.touches.back() {
            let start = if self.touches.len() > 1 {
                self.touches[self.touches.len() - 2].0
            } else {
                0
            };
            if start >= len {
                self.touches.pop_back();
            } else {
                break;
            }
        }
        if let Some(last) = self.touches.back_mut() {
            last.0 = last.0.min(len);
        }
        self.path = self.path.min(len);
    }

    /// Touches the leading `len` units at `now`, the latest touch (the units past them keep
    /// theirs).
    fn touch_prefix(&mut self, len: usize, now: u64) {
        while self.touches.front().is_some_and(|&(end, _)| end <= len) {
            self.touches.pop_front();
        }
        if len > 0 {
            self.touches.push_front((len, now));
        }
        self.path = self.path.max(len);
    }
}

/// The cache's stream states and one model's entries, borrowed apart from each other.
struct Parts<'a> {
    /// The cache's parameters.
    config: &'a UnitPrefixConfig,
    /// Every stream's state (cursor and touched path).
    streams: &'a mut Streams<StreamState>,
    /// One model's entries, by chained unit hash.
    entries: &'a mut Entries,
}

/// Stamps touch `t` on the entries `hashes`, units `from..` of a path whose pieces are
/// `pieces` (which say the run of each).
fn stamp(entries: &mut Entries, pieces: &Pieces, hashes: &[u64], from: usize, t: u64) {
    let to = from + hashes.len();
    for (units, run) in pieces.spans(from..to) {
        // A piece holding every entry of its run is stamped in one step.
        if entries.stamp_run(run, units.len(), t) {
            continue;
        }
        let mut near = Near::of(Some(run));
        for i in units {
            entries.stamp(hashes[i - from], i, &mut near, t);
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

    /// Whether entry `e` (unit `p` of `st`, hash `h`) has neither idled out nor aged out at
    /// `now`.
    fn unexpired(&self, st: &StreamState, e: &Vals, p: usize, h: u64, now: u64) -> bool {
        unexpired(self.config, self.streams, st, e, p, h, now)
    }

    /// How far into `st`'s path the entries are known not to have idled out at `now` without
    /// looking at them: the leading units whose touch is recent.
    fn fresh_path(&self, st: &StreamState, now: u64, len: usize) -> usize {
        st.fresh_len(now, self.idle()).min(len)
    }

    /// Before entry `h`, unit `p` of `st`'s model, is written anew: every other path holding
    /// it ends before it.
    fn cut_others(&mut self, st: &StreamState, p: usize, h: u64) {
        for o in self.streams.values_mut() {
            work::add(1);
            if holds(o, st, p, h) {
                o.cut(self.entries, p);
            }
        }
    }
}

/// Where to look first for unit `p` of `st`'s cursor: the run of the path's piece holding it,
/// or holding the unit before it.
fn path_near(st: &StreamState, p: usize) -> Near {
    if p < st.path {
        Near::of(st.pieces.run_of(p))
    } else if p > 0 && p == st.path {
        Near::of(st.pieces.run_of(p - 1))
    } else {
        Near::NONE
    }
}

/// Whether stream `o`'s path holds entry `h`, unit `p` of `st`'s model.
fn holds(o: &StreamState, st: &StreamState, p: usize, h: u64) -> bool {
    o.path > p && same_name(&o.model, &st.model) && o.auto.blocks()[p] == h
}

/// Whether a path other than `st`'s (taken out of `streams`) holds entry `h`, its unit `p`:
/// what [`Parts::cut_others`] would cut.
fn holds_elsewhere(streams: &Streams<StreamState>, st: &StreamState, p: usize, h: u64) -> bool {
    streams.values().any(|o| {
        work::add(1);
        holds(o, st, p, h)
    })
}

/// [`holds_elsewhere`] for unit `p` of `st`'s cursor, whose hash is read only for a path
/// that reaches it.
fn unit_held_elsewhere(streams: &Streams<StreamState>, st: &StreamState, p: usize) -> bool {
    streams.values().any(|o| {
        work::add(1);
        o.path > p && same_name(&o.model, &st.model) && o.auto.blocks()[p] == st.auto.blocks()[p]
    })
}

/// The longest path of `st`'s model among the streams other than `st` (taken out of
/// `streams`): no other path holds a unit past it.
fn others_reach(streams: &Streams<StreamState>, st: &StreamState) -> usize {
    streams
        .values()
        .filter(|o| same_name(&o.model, &st.model))
        .map(|o| o.path)
        .max()
        .unwrap_or(0)
}

/// Entry `e`, unit `p` of stream `st`'s cursor with hash `h`: its last use, counting the
/// touches of every path holding it.
fn last_used(streams: &Streams<StreamState>, st: &StreamState, e: &Vals, p: usize, h: u64) -> u64 {
    let mut t = e.last_used;
    let mut take = |o: &StreamState| {
        work::add(1);
        if o.path > p && same_name(&o.model, &st.model) && o.auto.blocks()[p] == h {
            t = t.max(o.touch_at(p));
        }
    };
    take(st);
    for o in streams.values() {
        take(o);
    }
    t
}

/// Whether entry `e` (unit `p` of `st`, hash `h`) has neither idled out nor aged out at `now`
/// under `config`.
fn unexpired(
    config: &UnitPrefixConfig,
    streams: &Streams<StreamState>,
    st: &StreamState,
    e: &Vals,
    p: usize,
    h: u64,
    now: u64,
) -> bool {
    let idle = config.idle_ttl.as_millis() as u64;
    now.saturating_sub(e.written_at) <= config.max_age.as_millis() as u64
        && (now.saturating_sub(e.last_used) <= idle
            || now.saturating_sub(last_used(streams, st, e, p, h)) <= idle)
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

    /// The parameters it runs with.
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
                st.cut(&mut state.entries, 0);
            }
            st.truncate_touches(0);
            st.pieces.truncate(0);
            st.walked.clear();
            st.model = req.model.clone();
        }
        let mut dropped = Vec::new();
        let adv = st.auto.advance_dropping(req, unit, &mut dropped);
        let kept = st.auto.blocks().len();
        // The stretches over hashes kept stay known; the cursor's hashes past `kept` are new.
        let known = st.walked.partition_point(|&(_, end)| end <= kept);
        st.walked.truncate(known);
        if st.path > kept {
            if let Some(state) = self.models.get_mut(&st.model) {
                for (range, t) in st.touched_spans(kept) {
                    let hashes = &dropped[range.start - kept..range.end - kept];
                    stamp(&mut state.entries, &st.pieces, hashes, range.start, t);
                }
            }
            st.truncate_touches(kept);
            st.pieces.truncate(kept);
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
                entries: &mut state.entries,
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
            let outcome = st.auto.first_for_model(req, min, unit, others);
            *self.streams.stream(&req.stream) = st;
            return outcome;
        }
        st.auto.block_hashes(unit as usize);
        let (mut parts, seen_records) = self.parts(&req.model);
        let (live_units, in_flight, tail, tail_from) = parts.live_prefix(&mut st, now);
        let live = live_units as u64 * unit;
        let cached = if live >= min { live } else { 0 };
        if cached > 0 {
            // A hit refreshes the units it read: they join the path, touched now.
            parts.retouch(&mut st, live_units, now, &tail, tail_from);
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

/// A unit's entry bounds, (`written_at`, `visible_at`), and its run: what a path's pieces are
/// built from.
type UnitBounds = ((u64, u64), u32);

impl Parts<'_> {
    /// Whether unit `p` of `st` is cached and live at `now`, and its entry; `near` says where
    /// to look first and is updated for the unit after.
    fn live_at(
        &mut self,
        st: &StreamState,
        p: usize,
        now: u64,
        near: &mut Near,
    ) -> (bool, Option<Vals>) {
        let h = st.auto.blocks()[p];
        match self.entries.get(h, p, near) {
            Some(e) => (
                e.visible_at <= now && self.unexpired(st, &e, p, h, now),
                Some(e),
            ),
            None => (false, None),
        }
    }

    /// The entry of unit `p` of `st`'s cursor, and how many units from `p` on are known live at
    /// `now` at once, by their run's write time and least last use (0: unit `p` is still to
    /// be judged, by [`Parts::unit_live`]); `near` as for [`Parts::live_at`].
    fn live_from(
        &mut self,
        st: &StreamState,
        p: usize,
        now: u64,
        near: &mut Near,
    ) -> (Option<Vals>, usize) {
        let (idle, max_age) = (self.idle(), self.max_age());
        let hashes = &st.auto.blocks()[p..];
        // Every entry is readable by its run's write time and last used no earlier; an entry
        // unexpired by its own last use is unexpired whatever the paths holding it say.
        let all_live = |w: u64, least: u64| {
            w <= now && now.saturating_sub(w) <= max_age && now.saturating_sub(least) <= idle
        };
        match self.entries.get_stretch((p, hashes), near, all_live) {
            Some((e, m)) => (Some(e), m),
            None => (None, 0),
        }
    }

    /// Whether entry `e`, unit `p` of `st`'s cursor, is live at `now`.
    fn unit_live(&self, st: &StreamState, e: &Vals, p: usize, now: u64) -> bool {
        let h = st.auto.blocks()[p];
        e.visible_at <= now && self.unexpired(st, e, p, h, now)
    }

    /// The leading units of `st`'s cursor that are live at `now`; whether the unit after them
    /// is cached but still being built (`Some(true)`), cached and expired (`Some(false)`) or
    /// absent (`None`); and the bounds and runs of the live units past the stream's path.
    /// Within the path (while its touch is recent) only the pieces whose bounds say they may
    /// have aged out or not be readable are looked at; past it, every unit.
    fn live_prefix(
        &mut self,
        st: &mut StreamState,
        now: u64,
    ) -> (usize, Option<bool>, Vec<Span>, usize) {
        let len = st.auto.blocks().len();
        let fresh = self.fresh_path(st, now, len);
        let (live, stopped) = self.live_in_path(st, now, fresh);
        let mut live = live;
        let mut tail = Vec::new();
        let mut near = path_near(st, live);
        let next = match stopped {
            Some(e) => e.map(|e| e.visible_at > now),
            None => loop {
                if live >= len {
                    break None;
                }
                match self.live_from(st, live, now, &mut near) {
                    (Some(e), m) if m > 0 => {
                        // Every entry is readable by its run's write time.
                        push_units(&mut tail, m, (e.written_at, e.written_at), e.run);
                        live += m;
                    }
                    (Some(e), _) if self.unit_live(st, &e, live, now) => {
                        push_unit(&mut tail, (e.written_at, e.visible_at), e.run);
                        live += 1;
                    }
                    (e, _) => break e.map(|e| e.visible_at > now),
                }
            },
        };
        if fresh == 0 {
            // The path's bounds were not used: the live units' bounds are all in `tail`.
            st.cut(self.entries, 0);
        }
        (live, next, tail, fresh)
    }

    /// The leading units of `st`'s path, up to `fresh` (whose touch is recent), that are live
    /// at `now`, and `Some(entry)` when a unit before `fresh` is not (the entry at it, if any).
    /// A piece whose units are all found live gets their exact bounds.
    fn live_in_path(
        &mut self,
        st: &mut StreamState,
        now: u64,
        fresh: usize,
    ) -> (usize, Option<Option<Vals>>) {
        let max_age = self.max_age();
        let look = |(w, v): (u64, u64)| now.saturating_sub(w) > max_age || v > now;
        let mut k = 0;
        while let Some(q) = st.pieces.first_from(k, &look) {
            let (units, run) = st.pieces.piece(q);
            if units.start >= fresh {
                break;
            }
            let mut bounds = NO_BOUNDS;
            let mut near = Near::of(Some(run));
            for i in units.start..units.end.min(fresh) {
                match self.live_at(st, i, now, &mut near) {
                    (true, Some(e)) => bounds = join(bounds, (e.written_at, e.visible_at)),
                    (_, e) => return (i, Some(e)),
                }
            }
            if units.end <= fresh {
                st.pieces.set(q, run, bounds);
            }
            k = q + 1;
        }
        (fresh, None)
    }

    /// Touches `[0, len)` of `st`'s units at `now`, making them part of its path (the touches
    /// it already holds stay counted: stamped where the new touch does not cover them, kept
    /// on the units past `len`); `tail` holds the bounds and runs of the units from `from` on
    /// (at most the path's length) up to `len`, in spans.
    fn retouch(&mut self, st: &mut StreamState, len: usize, now: u64, tail: &[Span], from: usize) {
        if now < st.touched_at() {
            // A clock behind the path's touches: they are stamped, and the path restarts.
            for (range, t) in st.touched_spans(0) {
                let hashes = &st.auto.blocks()[range.clone()];
                stamp(self.entries, &st.pieces, hashes, range.start, t);
            }
            let keep = st.path.min(len);
            st.touches.clear();
            st.path = keep;
            st.pieces.truncate(keep);
        }
        debug_assert!(from <= st.path || len <= st.path);
        if len > st.path {
            let skip = st.path - from;
            st.pieces.extend(units_of(tail, skip, len - st.path));
        }
        st.touch_prefix(len, now);
        debug_assert_eq!(st.pieces.units(), st.path);
    }

    /// Stores unit `i` of `st` (hash `h`), readable from `r`, at `now`: an unexpired entry is
    /// refreshed (readable from the earlier time, used now), an expired or missing one written
    /// anew (joining `group`). Returns the entry's bounds and run; `near` as for
    /// [`Entries::store`].
    fn write_one(
        &mut self,
        st: &StreamState,
        (i, r, now): (usize, u64, u64),
        group: &mut Option<Group>,
        near: &mut Near,
    ) -> UnitBounds {
        let h = st.auto.blocks()[i];
        let (config, streams) = (self.config, &*self.streams);
        let stored = self.entries.store(
            (h, i),
            (r, now),
            group,
            near,
            |e| unexpired(config, streams, st, e, i, h, now),
            // Expired and on no other path: written anew in place (no second probe).
            || !holds_elsewhere(streams, st, i, h),
        );
        match stored {
            Stored::Written(run) => ((r, r), run),
            Stored::Refreshed(e) => ((e.written_at, e.visible_at), e.run),
            Stored::Expired => {
                self.cut_others(st, i, h);
                ((r, r), self.entries.replace((h, i), r, group, near))
            }
        }
    }

    /// Stores in one pass the units from `i` (before `end`, past `st`'s path) whose entries
    /// sit in consecutive slots of one run, readable from `r`, at `now`: a whole run expired
    /// or unexpired by its entries' own values, or the leading units expired by their own
    /// values and on no other path; what [`Parts::write_one`] does to each (see
    /// [`Entries::store_stretch`], which tries the run `known` first). `units` 0: none.
    fn store_stretch(
        &mut self,
        st: &StreamState,
        (i, end): (usize, usize),
        (r, now): (u64, u64),
        (group, near): (&mut Option<Group>, &mut Near),
        (known, reach): (Option<(u32, usize)>, usize),
    ) -> Stretch {
        debug_assert!(i >= st.path);
        let (idle, max_age) = (self.idle(), self.max_age());
        let hashes = &st.auto.blocks()[i..end];
        let streams = &*self.streams;
        // With no path holding unit `i`, none holds the units after it (hashes are chained):
        // the entries' own last use is their last use. An entry unexpired by its own last
        // use is unexpired whatever the paths holding it say.
        let rules = Rules {
            expired: |w, used| now.saturating_sub(w) > max_age || now.saturating_sub(used) > idle,
            fresh: |w, least| now.saturating_sub(w) <= max_age && now.saturating_sub(least) <= idle,
        };
        // No other path of the model reaches past `reach` units.
        let free = || i >= reach || !unit_held_elsewhere(streams, st, i);
        self.entries
            .store_stretch((i, hashes), (r, now), (group, near), rules, (known, free))
    }

    /// Stores piece `q` of `st`'s path, readable from `r`, at `now`: a piece that aged out and
    /// holds its whole run is written anew as one (after cutting the other paths that hold
    /// it, which all hold its first unit); any other, unit by unit (its units all aged out, so
    /// all written anew into one new run, or none did, so all refreshed). No other path
    /// reaches past `reach` units.
    fn write_piece(&mut self, st: &mut StreamState, q: usize, (r, now): (u64, u64), reach: usize) {
        let (units, run) = st.pieces.piece(q);
        let (written, whole) = self.entries.run_written(run, units.len());
        if now.saturating_sub(written) > self.max_age() && whole {
            if units.start < reach {
                let h = st.auto.blocks()[units.start];
                if holds_elsewhere(self.streams, st, units.start, h) {
                    self.cut_others(st, units.start, h);
                }
            }
            self.entries.rewrite_run(run, r);
            st.pieces.set(q, run, (r, r));
            return;
        }
        let mut group = None;
        let (mut bounds, mut runs) = (NO_BOUNDS, None);
        let mut near = Near::of(Some(run));
        for i in units {
            let (b, run) = self.write_one(st, (i, r, now), &mut group, &mut near);
            bounds = join(bounds, b);
            debug_assert!(
                runs.is_none_or(|k| k == run),
                "a piece's units stay in one run"
            );
            runs = Some(run);
        }
        st.pieces
            .set(q, runs.expect("pieces are not empty"), bounds);
    }

    /// Stores the units of `st`'s cursor (the first `prompt_units` readable from `ready.0`, the
    /// rest from `ready.1`) at `now`. Within the stream's path (while its touch is recent) only
    /// the pieces whose bounds say they may have aged out or be readable later than `ready.0`
    /// are looked at: the others' refresh is the path's new touch.
    fn write(&mut self, st: &mut StreamState, prompt_units: usize, ready: (u64, u64), now: u64) {
        let len = st.auto.blocks().len();
        // A touch at `now` may stand for the entries' own stamps when it is the stream's
        // latest and written entries are not stamped later than `now` would say (they are
        // stamped `ready`); otherwise every entry is stamped itself.
        let lazy = ready.0 >= now && ready.1 >= now && now >= st.touched_at();
        if !lazy {
            st.cut(self.entries, 0);
        }
        let fresh = self.fresh_path(st, now, len);
        // The path past `fresh` is touched anew below: its old touches are stamped first.
        st.cut(self.entries, fresh);
        debug_assert!(fresh <= prompt_units && st.pieces.units() == fresh);
        let max_age = self.max_age();
        let look = |(w, v): (u64, u64)| now.saturating_sub(w) > max_age || v > ready.0;
        // The other paths only get shorter during the store (a write cuts them).
        let reach = others_reach(self.streams, st);
        let mut k = 0;
        while let Some(q) = st.pieces.first_from(k, &look) {
            self.write_piece(st, q, (ready.0, now), reach);
            k = q + 1;
        }
        let at = |i: usize| if i < prompt_units { ready.0 } else { ready.1 };
        let mut group = None;
        let mut near = path_near(st, fresh);
        let mut tail = std::mem::take(&mut st.spans);
        tail.clear();
        let mut i = fresh;
        // A stretch is tried first, except right after a refreshed unit that does not end its
        // run (most of whose successors are refreshed too: the lookup would be made twice).
        let mut stretch = true;
        let mut ahead = Ahead::new(std::mem::take(&mut st.walked));
        while i < len {
            if near.vacant() {
                // No entry from here on: the rest of this part (prompt or reply) in one step.
                let end = if i < prompt_units { prompt_units } else { len };
                let hashes = &st.auto.blocks()[i..end];
                let run = self
                    .entries
                    .write_vacant((i, hashes), at(i), &mut group, &mut near);
                push_units(&mut tail, end - i, (at(i), at(i)), run);
                i = end;
                continue;
            }
            if stretch {
                let known = ahead.at_unit(self.entries, i);
                let end = if i < prompt_units { prompt_units } else { len };
                let gn = (&mut group, &mut near);
                let s = self.store_stretch(st, (i, end), (at(i), now), gn, (known, reach));
                if s.units > 0 {
                    let b = s.refreshed.unwrap_or((at(i), at(i)));
                    push_units(&mut tail, s.units, b, s.run);
                    i += s.units;
                    ahead.walked.push((s.run, i));
                    continue;
                }
            }
            let (b, run) = self.write_one(st, (i, at(i), now), &mut group, &mut near);
            // The unit after a run's last may start another run.
            stretch = (b == (at(i), at(i)) && group.is_some_and(|g| g.run() == run))
                || self.entries.ends_run(run, i);
            push_unit(&mut tail, b, run);
            i += 1;
        }
        st.walked = ahead.walked;
        if lazy {
            // Every unit the walk went over now holds its own last use, `now` or later (a
            // refresh stamps it, a write is used from `ready`), so the path's touch adds
            // nothing to them: they join the path only to spare the next store, if it comes
            // within `idle_ttl`, the walk. A stream whose requests come further apart would
            // pay for it twice (building the path's pieces here, stamping and cutting them at
            // its next lookup), so after such a gap the walked units stay off the path, which
            // keeps what the lookup read (touched `now` then: `fresh`).
            let short_gap = st
                .stored_at
                .is_none_or(|t| now.saturating_sub(t) <= self.idle());
            let joined = if short_gap { len } else { fresh };
            self.retouch(st, joined, now, &tail, fresh);
        }
        st.spans = tail;
        st.stored_at = Some(now);
    }
}

/// How many stretches ahead of a store's walk [`Ahead`] fetches: enough for the memory to
/// answer while the walk does the steps before.
const AHEAD: usize = 6;

/// A store's walk over its tail a stretch at a time, with the stretches the stream's previous
/// store went over (kept while the cursor's hashes under them stay: see
/// [`StreamState::walked`]). The walk is mostly over the same runs: each is tried first (a
/// run still whole where it was is known to hold the cursor's units without reading their
/// hashes, far apart in memory), and the runs a few stretches ahead are fetched while it works.
struct Ahead {
    /// The previous walk's stretches: their run and the unit after them.
    prev: Vec<(u32, usize)>,
    /// The first of `prev` whose stretch ends past the walk's unit.
    at: usize,
    /// This walk's stretches, as `prev`.
    walked: Vec<(u32, usize)>,
}

impl Ahead {
    fn new(prev: Vec<(u32, usize)>) -> Ahead {
        Ahead {
            walked: Vec::with_capacity(prev.len()),
            prev,
            at: 0,
        }
    }

    /// The previous walk's stretch ending first past unit `i` (its run and end), fetching
    /// the run [`AHEAD`] stretches on ahead of use.
    fn at_unit(&mut self, entries: &Entries, i: usize) -> Option<(u32, usize)> {
        while self.prev.get(self.at).is_some_and(|&(_, end)| end <= i) {
            self.at += 1;
        }
        if let Some(&(run, _)) = self.prev.get(self.at + AHEAD) {
            entries.prefetch_run(run);
        }
        self.prev.get(self.at).copied()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::prompt::{Level, RequestSettings, Role, Segment, SegmentKind};

    /// A message segment of `len` tokens, distinct per `id`.
    fn seg(id: u32, len: u32) -> Arc<Segment> {
        Arc::new(Segment {
            id: id as u64,
            level: Level::Messages,
            kind: SegmentKind::Message(Role::User),
            label: format!("s{id}"),
            tokens: (0..len).map(|i| id << 16 | i).collect(),
            breakpoint: None,
        })
    }

    /// Sends `segments` on `stream` at second `at` and stores them, readable at once; returns
    /// the tokens read from the cache.
    fn send(cache: &mut UnitPrefixCache, stream: &str, segments: &[Arc<Segment>], at: u64) -> u64 {
        let req = Request {
            index: 0,
            stream: stream.into(),
            step: 0,
            model: "gemini-2.5-pro".into(),
            sent_at_ms: at * 1000,
            segments: segments.to_vec(),
            settings: RequestSettings::default(),
            reply: Vec::new(),
            output_tokens: 0,
        };
        let outcome = cache.lookup(&req);
        cache.store(&req, &outcome, at * 1000, at * 1000);
        outcome.cached_tokens
    }

    fn cache() -> UnitPrefixCache {
        let config = UnitPrefixConfig {
            unit: 1,
            min_tokens: Some(1),
            idle_ttl: Duration::from_secs(300),
            max_age: Duration::from_secs(60),
            cache_reply: false,
            build_delay: Duration::ZERO,
        };
        UnitPrefixCache::new("gemini", config, &PriceTable::bundled())
    }

    #[test]
    fn units_written_together_age_out_together_and_are_written_anew_together() {
        let (a, b) = (seg(1, 100), seg(2, 20));
        let mut c = cache();
        assert_eq!(send(&mut c, "main", std::slice::from_ref(&a), 0), 0);
        assert_eq!(send(&mut c, "main", &[a.clone(), b.clone()], 30), 100);
        // `a`, written at 0, is older than `max_age`: the hit stops before it, and it is written
        // anew (`b`, written at 30, is not).
        assert_eq!(send(&mut c, "main", &[a.clone(), b.clone()], 70), 0);
        assert_eq!(send(&mut c, "main", &[a.clone(), b.clone()], 80), 120);
        // Now `b` has aged out, and `a` (written at 70) has not.
        assert_eq!(send(&mut c, "main", &[a.clone(), b.clone()], 95), 100);
        assert_eq!(send(&mut c, "main", &[a, b], 100), 120);
    }

    #[test]
    fn a_stream_that_writes_anew_part_of_another_streams_run_cuts_that_streams_path() {
        let (a, b, x) = (seg(1, 100), seg(2, 50), seg(3, 10));
        let mut c = cache();
        // `main` writes `a` and `b` in one run; `agent` reads `a` and adds `x`.
        assert_eq!(send(&mut c, "main", &[a.clone(), b.clone()], 0), 0);
        assert_eq!(send(&mut c, "agent", &[a.clone(), x.clone()], 30), 100);
        // At 70 the run has aged out: `agent` writes `a` anew (only part of the run), and
        // `x` (written at 30) is still there.
        assert_eq!(send(&mut c, "agent", &[a.clone(), x.clone()], 70), 0);
        assert_eq!(send(&mut c, "agent", &[a.clone(), x], 71), 110);
        // `main` reads the new `a`; its `b` aged out with the old run.
        assert_eq!(send(&mut c, "main", &[a.clone(), b.clone()], 75), 100);
        assert_eq!(send(&mut c, "main", &[a, b], 76), 150);
    }
}
