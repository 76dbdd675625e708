//! Per-stream memory of the previous request, so a cache model re-derives only what is new.
//!
//! Consecutive requests of one stream share most of their segments: the engine reuses the very
//! same `Arc<Segment>`s, and appends. A [`Cursor`] keeps the previous request's segments alive
//! together with what a model derived from them (cumulative token ends, chained prefix hashes);
//! the next request is compared by pointer, the shared prefix is kept and only the rest is
//! derived again. Holding the `Arc`s is what makes pointer equality a sound test of identity: a
//! segment the cursor still references cannot be freed and its address reused.
//!
//! The comparison itself is linear in the segment count but costs well under a nanosecond per
//! segment (pointer compares, 32 at a time); everything token-sized is incremental.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64;

use super::common::{self, Departure, HashKeyed, SeenMatch, SeenMemo, SeenPrefixes};
use super::{BreakReason, CacheOutcome, ReuseStop};
use crate::prompt::{Request, Segment};

/// Length of the longest common prefix of `a` and `b` by identity (`Arc::ptr_eq`).
pub(crate) fn same_prefix(a: &[Arc<Segment>], b: &[Arc<Segment>]) -> usize {
    const CHUNK: usize = 32;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let addr = |s: &Arc<Segment>| Arc::as_ptr(s) as usize;
    let mut i = 0;
    // A chunk at a time, its differences or-ed together without an early exit, so the compiler
    // turns it into a few vector instructions; the chunk that differs is then scanned.
    for (x, y) in a.chunks_exact(CHUNK).zip(b.chunks_exact(CHUNK)) {
        let diff = x
            .iter()
            .zip(y)
            .fold(0usize, |d, (p, q)| d | (addr(p) ^ addr(q)));
        if diff != 0 {
            break;
        }
        i += CHUNK;
    }
    while i < n && Arc::ptr_eq(&a[i], &b[i]) {
        i += 1;
    }
    i
}

/// What the sender of a request knows about its segments: the request is number `serial`, and
/// its first `unchanged` segments are, by identity, those of request number `base` of the same
/// stream (0: none). A cursor that last moved to request `base` (or to `serial` itself) then
/// starts its pointer compare past them: a request costs what it adds, not its segment count.
/// The hint holds only for the segment list at `ptr` with `len` entries, and only while
/// [`with_hint`] runs (the engine prices one request inside it; a driver that feeds a cache
/// model requests itself, as the `cache_models` bench does, can give the same hint).
#[derive(Debug, Clone, Copy)]
pub struct SentHint {
    /// This request's number (process-wide, from `SERIAL`).
    serial: u64,
    /// The number of the stream's previous request whose segments it keeps (0: none).
    base: u64,
    /// How many leading segments are, by identity, `base`'s.
    unchanged: usize,
    /// Address of the request's segment list (the hint holds for that list only).
    ptr: usize,
    /// Length of that list.
    len: usize,
}

/// Serials of hinted requests; 0 is never handed out.
static SERIAL: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The hint of the request being priced on this thread, if its sender gave one.
    static HINT: Cell<Option<SentHint>> = const { Cell::new(None) };
}

impl SentHint {
    /// A new request number for `segments`, whose first `unchanged` are those of request
    /// `base` (0 when there is none).
    pub fn new(segments: &[Arc<Segment>], base: u64, unchanged: usize) -> Self {
        SentHint {
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            base,
            unchanged,
            ptr: segments.as_ptr() as usize,
            len: segments.len(),
        }
    }

    /// This request's number (the `base` of the stream's next request).
    pub fn serial(&self) -> u64 {
        self.serial
    }
}

/// Runs `f` (the lookup and store of one request) with `hint` in force on this thread.
pub fn with_hint<T>(hint: SentHint, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<SentHint>);
    impl Drop for Reset {
        fn drop(&mut self) {
            HINT.with(|h| h.set(self.0));
        }
    }
    let _reset = Reset(HINT.with(|h| h.replace(Some(hint))));
    f()
}

/// The segments a stream sent last, with their token ends and chained prefix hashes.
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    /// The segments of the last request (prompt, then the reply once stored), in prompt order.
    segs: Vec<Arc<Segment>>,
    /// `ends[i]`: tokens up to and including segment `i`.
    ends: Vec<u64>,
    /// `hashes[i]`: chained hash of segments `0..=i` (see [`common::chain`]), salted per level.
    hashes: Vec<u64>,
    /// The level salts the hashes were taken with (tools, system, messages; see
    /// [`common::level_salts`]): a change of settings changes every later hash.
    salts: [u64; 3],
    /// Model of the last request the cursor moved to (`None` before the first).
    model: Option<String>,
    /// Segments of that request's prompt (later ones were appended with [`Cursor::extend`]).
    prompt_len: usize,
    /// A buffer kept between requests (the previous prompt's changed hashes).
    scratch: Vec<u64>,
    /// Number of the hinted request the cursor last moved to (0: none or not hinted).
    serial: u64,
}

/// What moving a cursor to a request found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Advance {
    /// Leading segments kept (identical to before; their ends and hashes were not recomputed).
    pub keep: usize,
    /// How the prompt relates to the previous prompt the cursor moved to.
    pub departure: Departure,
    /// The request runs on the same model as the previous one.
    pub same_model: bool,
}

impl Cursor {
    /// Moves the cursor to `req`'s prompt hashed with level `salts`.
    pub fn advance(&mut self, req: &Request, salts: [u64; 3]) -> Advance {
        let segments = &req.segments;
        let (known, serial) = self.known_prefix(segments);
        let keep = if salts == self.salts {
            known + same_prefix(&self.segs[known..], &segments[known..])
        } else {
            0
        };
        self.serial = serial;
        // The previous prompt's hashes past the kept prefix, to find where the new one departs.
        let old_prompt = self.prompt_len.min(self.hashes.len());
        let mut old_tail = std::mem::take(&mut self.scratch);
        old_tail.clear();
        old_tail.extend_from_slice(&self.hashes[keep.min(old_prompt)..old_prompt]);
        self.salts = salts;
        self.truncate(keep);
        self.extend(&segments[keep..]);
        self.prompt_len = segments.len();
        let same_model = self.model.as_deref() == Some(req.model.as_str());
        let departure = match &self.model {
            None => Departure::First,
            Some(_) if !same_model => Departure::ModelChanged,
            Some(_) => {
                let new = &self.hashes[keep..];
                match old_tail.iter().zip(new).position(|(a, b)| a != b) {
                    Some(i) => Departure::ChangedAt(keep + i),
                    None if new.len() < old_tail.len() => Departure::ChangedAt(segments.len()),
                    None => Departure::Extends,
                }
            }
        };
        if !same_model {
            self.model = Some(req.model.clone());
        }
        self.scratch = old_tail;
        Advance {
            keep,
            departure,
            same_model,
        }
    }

    /// How many leading segments of `segments` the hint in force says are the cursor's own
    /// (at most the previous prompt the cursor still holds), and the serial to remember.
    fn known_prefix(&self, segments: &[Arc<Segment>]) -> (usize, u64) {
        let Some(h) = HINT.with(Cell::get) else {
            return (0, 0);
        };
        if h.ptr != segments.as_ptr() as usize || h.len != segments.len() {
            return (0, 0);
        }
        let known = match self.serial {
            0 => 0,
            s if s == h.serial => segments.len(),
            s if s == h.base => h.unchanged,
            _ => 0,
        };
        let known = known
            .min(self.prompt_len)
            .min(self.segs.len())
            .min(segments.len());
        debug_assert_eq!(
            same_prefix(&self.segs[..known], &segments[..known]),
            known,
            "a sent hint claims segments the cursor does not hold"
        );
        (known, h.serial)
    }

    /// Appends segments after the current ones (a reply that the next prompt repeats).
    pub fn extend(&mut self, segments: &[Arc<Segment>]) {
        let mut total = self.total();
        let mut prev = self.hashes.last().copied().unwrap_or(0);
        common::work::add(segments.len() as u64);
        for s in segments {
            total += s.len() as u64;
            prev = common::chain(prev, s, common::salt_for(&self.salts, s.level));
            self.segs.push(s.clone());
            self.ends.push(total);
            self.hashes.push(prev);
        }
    }

    /// Appends what `req` generated, in cache order: its reasoning segment (if any, with ids
    /// from `reasoning`), then its visible reply's own segments (no list built in between).
    pub fn extend_generated(&mut self, reasoning: &mut common::ReasoningIds, req: &Request) {
        if let Some(r) = reasoning.reasoning(req) {
            self.extend(std::slice::from_ref(&r));
        }
        self.extend(&req.reply);
    }

    /// Keeps the first `n` segments.
    pub fn truncate(&mut self, n: usize) {
        self.segs.truncate(n);
        self.ends.truncate(n);
        self.hashes.truncate(n);
        self.prompt_len = self.prompt_len.min(n);
    }

    /// The stop for a prompt that departs from the stream's previous prompt, if it does: a
    /// model change stops at token 0, a changed segment at its start.
    pub fn departure_stop(&self, d: Departure) -> Option<ReuseStop> {
        let n = self.prompt_len;
        match d {
            Departure::First | Departure::Extends => None,
            Departure::ModelChanged => self.stop_at(n, 0, BreakReason::ModelChanged),
            Departure::ChangedAt(i) => self.stop_at(n, self.start(i), BreakReason::PrefixChanged),
        }
    }

    pub fn len(&self) -> usize {
        self.segs.len()
    }

    pub fn segments(&self) -> &[Arc<Segment>] {
        &self.segs
    }

    pub fn ends(&self) -> &[u64] {
        &self.ends
    }

    pub fn hashes(&self) -> &[u64] {
        &self.hashes
    }

    /// Total tokens of the current segments.
    pub fn total(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Tokens before segment `i`.
    pub fn start(&self, i: usize) -> u64 {
        if i == 0 {
            0
        } else {
            self.ends[i - 1]
        }
    }

    /// Index of the segment holding token `pos`, if any (binary search).
    pub fn segment_at(&self, pos: u64) -> Option<usize> {
        let i = self.ends.partition_point(|&e| e <= pos);
        (i < self.ends.len()).then_some(i)
    }

    /// The stop record for reuse ending at token `at` of the first `n` segments (the request's
    /// prompt): the segment holding that token, else the last non-empty one, else the last one.
    /// The answer of a linear scan over the segments, in O(log n).
    pub fn stop_at(&self, n: usize, at: u64, reason: BreakReason) -> Option<ReuseStop> {
        let n = n.min(self.segs.len());
        let i = self
            .segment_at(at)
            .filter(|&i| i < n)
            .or_else(|| (0..n).rev().find(|&i| !self.segs[i].is_empty()))
            .or_else(|| n.checked_sub(1))?;
        let seg = &self.segs[i];
        Some(ReuseStop {
            at_token: at,
            level: seg.level,
            segment: seg.label.clone(),
            reason,
        })
    }
}

/// The per-stream state of an automatic cache (OpenAI legacy, paged, radix): the cursor, what
/// the stream already found in or recorded into the model's [`SeenPrefixes`], and the chained
/// hashes of the full blocks of the cursor's tokens (for block caches).
///
/// [`SeenPrefixes`]: common::SeenPrefixes
#[derive(Debug, Default)]
pub(crate) struct AutoStream {
    /// The stream's last request, segment by segment.
    pub cursor: Cursor,
    /// What the stream already found in or recorded into the model's seen prefixes.
    pub seen: SeenMemo,
    /// `blocks[i]`: chained hash of the cursor's tokens up to the end of full block `i`.
    blocks: Vec<u64>,
    /// A block's bytes where it spans segments (kept between requests).
    scratch: Vec<u8>,
}

/// The chained hash of a block whose predecessor's chained hash is `prev` (0 for a chain's
/// first block): the block's own xxh3, folded into `prev` by one 64×64→128-bit multiply whose
/// two halves are xor-ed (a folded multiply). Equal chained hashes mean equal blocks all the way
/// from the chain's start, as with vLLM's hash of (parent, tokens), up to a 64-bit collision.
/// The block's own hash does not wait for `prev`, so consecutive blocks' hashes overlap in the
/// core and only the multiply is serial; seeding each block's xxh3 with `prev` made every hash
/// wait for the one before (docs/performance.md, "Block hashes chained by a multiply").
#[inline]
pub fn chain_hash(prev: u64, bytes: &[u8]) -> u64 {
    // xxh3's PRIME64_1 and PRIME64_2 shift both factors away from zero (a zero factor would
    // lose the other), PRIME64_3 (odd) spreads a token id over the word.
    const P: u64 = 0x9E37_79B1_85EB_CA87;
    const Q: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const R: u64 = 0x1656_67B1_9E37_79F9;
    // A one-token block (`gemini`'s unit) is its token id spread by an odd multiply, a
    // bijection: its xxh3 cost twice the rest of the step.
    let own = match <[u8; 4]>::try_from(bytes) {
        Ok(token) => u64::from(u32::from_le_bytes(token)).wrapping_mul(R),
        Err(_) => xxh3_64(bytes),
    };
    let m = u128::from(prev ^ P) * u128::from(own ^ Q);
    (m as u64) ^ ((m >> 64) as u64)
}

/// The bytes of `tokens` as little-endian token ids, in place (what a block hash covers);
/// `None` on a big-endian target, where they are copied instead.
fn token_bytes(tokens: &[u32]) -> Option<&[u8]> {
    if cfg!(target_endian = "little") {
        Some(bytemuck::cast_slice(tokens))
    } else {
        None
    }
}

impl AutoStream {
    /// The outcome of a prompt of `prompt` tokens for a model with nothing cached: written (free)
    /// in whole `unit`s when it has at least `min` tokens, read nothing, and broken at the first
    /// segment as cold, or as a model change when `others` (another model) has entries.
    pub fn first_for_model(
        &self,
        req: &Request,
        min: u64,
        unit: u64,
        others: bool,
    ) -> CacheOutcome {
        let prompt = self.cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        if prompt >= min {
            outcome.write_5m_tokens = prompt / unit * unit;
        }
        outcome.uncached_input_tokens = prompt - outcome.write_5m_tokens;
        outcome.stop = self
            .cursor
            .stop_at(req.segments.len(), 0, common::cold_reason(others));
        outcome
    }

    /// Moves to `req`'s prompt; block hashes of `block` tokens survive up to the kept tokens.
    pub fn advance(&mut self, req: &Request, block: usize) -> Advance {
        let adv = self.cursor.advance(req, [0; 3]);
        self.seen.keep(adv.keep, adv.same_model);
        self.blocks
            .truncate(self.cursor.start(adv.keep) as usize / block.max(1));
        adv
    }

    /// [`AutoStream::advance`], first appending to `dropped` the block hashes it lets go (those
    /// past the prompt's unchanged prefix).
    pub fn advance_dropping(
        &mut self,
        req: &Request,
        block: usize,
        dropped: &mut Vec<u64>,
    ) -> Advance {
        let adv = self.cursor.advance(req, [0; 3]);
        self.seen.keep(adv.keep, adv.same_model);
        let keep = self.cursor.start(adv.keep) as usize / block.max(1);
        if keep < self.blocks.len() {
            dropped.extend_from_slice(&self.blocks[keep..]);
        }
        self.blocks.truncate(keep);
        adv
    }

    /// The block hashes computed so far (a prefix of [`AutoStream::block_hashes`]).
    pub fn blocks(&self) -> &[u64] {
        &self.blocks
    }

    /// Chained hashes of the full `block`-token blocks of the cursor's tokens, hashing only the
    /// blocks not hashed before (the same values as `BlockHasher`).
    pub fn block_hashes(&mut self, block: usize) -> &[u64] {
        let block = block.max(1);
        let total = self.cursor.total() as usize / block;
        if self.blocks.len() < total {
            let from = self.blocks.len() * block;
            let mut prev = self.blocks.last().copied().unwrap_or(0);
            // One block's bytes, filled a slice at a time (little-endian token ids) where a block
            // spans segments; a block inside one segment is hashed in place.
            let mut buf = std::mem::take(&mut self.scratch);
            buf.resize(block * 4, 0);
            let mut filled = 0usize;
            common::work::add((total * block - from) as u64);
            let first = self.cursor.segment_at(from as u64).unwrap_or(0);
            let mut pos = self.cursor.start(first) as usize;
            for seg in &self.cursor.segments()[first..] {
                let skip = from.saturating_sub(pos);
                pos += seg.len();
                if skip >= seg.len() {
                    continue;
                }
                let mut src = &seg.tokens[skip..];
                while !src.is_empty() {
                    if filled == 0 && src.len() >= block {
                        if let Some(bytes) = token_bytes(&src[..block]) {
                            prev = chain_hash(prev, bytes);
                            self.blocks.push(prev);
                            src = &src[block..];
                            continue;
                        }
                    }
                    let take = (block - filled).min(src.len());
                    for (dst, t) in buf[filled * 4..(filled + take) * 4]
                        .chunks_exact_mut(4)
                        .zip(&src[..take])
                    {
                        dst.copy_from_slice(&t.to_le_bytes());
                    }
                    filled += take;
                    src = &src[take..];
                    if filled == block {
                        prev = chain_hash(prev, &buf);
                        self.blocks.push(prev);
                        filled = 0;
                    }
                }
            }
            self.scratch = buf;
        }
        &self.blocks[..total]
    }
}

/// Equal strings, compared inline: the names compared here are short, and a libc `memcmp` call
/// per lookup showed up in profiles. Eight bytes a step, then the rest byte by byte.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().expect("chunks of 8"));
    let (x, y) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest = x.remainder().iter().zip(y.remainder()).all(|(p, q)| p == q);
    rest && x.zip(y).all(|(p, q)| word(p) == word(q))
}

/// Values by name (streams, models): usually few entries, looked up once or twice per request,
/// the last one found tried first; past [`ByName::INDEXED`] entries (a workload's hundreds of
/// streams in one model) a hash index finds the others.
#[derive(Debug)]
pub(crate) struct ByName<V> {
    /// (name, value) pairs in insertion order.
    items: Vec<(String, V)>,
    /// Index in `items` of the last entry found, tried first on the next lookup.
    last: usize,
    /// Position in `items` by xxh3 of the name (names sharing a hash in insertion order),
    /// kept once there are more than [`ByName::INDEXED`] entries.
    index: Option<HashKeyed<u64, Vec<usize>>>,
}

impl<V> Default for ByName<V> {
    fn default() -> Self {
        ByName {
            items: Vec::new(),
            last: 0,
            index: None,
        }
    }
}

impl<V> ByName<V> {
    /// Entries past which lookups go through the hash index instead of a scan.
    const INDEXED: usize = 16;

    fn find(&mut self, name: &str) -> Option<usize> {
        if self
            .items
            .get(self.last)
            .is_some_and(|(n, _)| same_name(n, name))
        {
            return Some(self.last);
        }
        let i = match &self.index {
            Some(index) => {
                let at = index.get(&xxh3_64(name.as_bytes()))?;
                *at.iter().find(|&&i| same_name(&self.items[i].0, name))?
            }
            None => self.items.iter().position(|(n, _)| same_name(n, name))?,
        };
        self.last = i;
        Some(i)
    }

    /// Appends `name` (absent) with `value`; returns its position.
    fn push(&mut self, name: &str, value: V) -> usize {
        self.items.push((name.to_string(), value));
        let i = self.items.len() - 1;
        if let Some(index) = &mut self.index {
            index.entry(xxh3_64(name.as_bytes())).or_default().push(i);
        } else if self.items.len() > Self::INDEXED {
            let mut index = HashKeyed::<u64, Vec<usize>>::default();
            for (j, (n, _)) in self.items.iter().enumerate() {
                index.entry(xxh3_64(n.as_bytes())).or_default().push(j);
            }
            self.index = Some(index);
        }
        i
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        let i = self.find(name)?;
        Some(&mut self.items[i].1)
    }

    pub fn contains(&mut self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The value of `name`, made by `make` when absent.
    pub fn get_or_insert_with(&mut self, name: &str, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(name) {
            Some(i) => i,
            None => {
                self.last = self.push(name, make());
                self.last
            }
        };
        &mut self.items[i].1
    }

    /// Position of `name` (names keep their position: none is ever removed).
    pub fn position(&mut self, name: &str) -> Option<usize> {
        self.find(name)
    }

    /// The value at position `i`.
    pub fn at_mut(&mut self, i: usize) -> &mut V {
        &mut self.items[i].1
    }

    /// Whether a name other than `name` is present.
    pub fn any_other(&self, name: &str) -> bool {
        self.items.iter().any(|(n, _)| !same_name(n, name))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.items.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Every (name, value), values to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut V)> {
        self.items.iter_mut().map(|(n, v)| (n.as_str(), v))
    }
}

/// One `C` per stream, or per (stream, model): each stream is its own conversation, and some
/// caches keep state per model.
#[derive(Debug)]
pub(crate) struct Streams<C> {
    /// Stream name -> model name -> state (model `""` for caches that keep one state per
    /// stream).
    map: ByName<ByName<C>>,
}

impl<C> Default for Streams<C> {
    fn default() -> Self {
        Streams {
            map: ByName::default(),
        }
    }
}

impl<C: Default> Streams<C> {
    /// The state of `stream` on `model`, created empty on first use.
    pub fn get(&mut self, stream: &str, model: &str) -> &mut C {
        self.map
            .get_or_insert_with(stream, ByName::default)
            .get_or_insert_with(model, C::default)
    }

    /// The state of `stream`, whatever its model.
    pub fn stream(&mut self, stream: &str) -> &mut C {
        self.get(stream, "")
    }

    /// Every state.
    pub fn values(&self) -> impl Iterator<Item = &C> {
        self.map.iter().flat_map(|(_, m)| m.iter().map(|(_, c)| c))
    }

    /// Every state, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut C> {
        self.map
            .items
            .iter_mut()
            .flat_map(|(_, m)| m.items.iter_mut().map(|(_, c)| c))
    }
}

impl SeenPrefixes {
    /// [`SeenPrefixes::matches`] for the cursor's hashes, resuming from `memo`.
    pub fn matches_from(&self, cursor: &Cursor, now: u64, memo: &mut SeenMemo) -> SeenMatch {
        let m = self.memo_match(cursor.hashes(), now, memo);
        SeenMatch {
            stored_visible: cursor.start(m.stored_visible),
            stored_any: cursor.start(m.stored_any),
            seen: cursor.start(m.seen),
            extends: m.extends,
        }
    }
}

/// Explains why an automatic cache (OpenAI legacy, paged, radix) reused `cached` tokens.
/// `live` is the matched length before the cache's own rounding and caps; `raw` the length that
/// would have matched had nothing expired or been evicted (`gone` says which of the two applies).
#[allow(clippy::too_many_arguments)]
pub(crate) fn automatic_stop(
    cursor: &Cursor,
    cached: u64,
    live: u64,
    raw: u64,
    raw_in_flight: bool,
    below_min: bool,
    seen: SeenMatch,
    unit: u64,
    gone: BreakReason,
    departure: Option<ReuseStop>,
) -> Option<ReuseStop> {
    let unit = unit.max(1);
    let whole = |n: u64| n / unit * unit;
    let prompt = cursor.total();
    let n = cursor.len();
    let stop_at = |at, reason| cursor.stop_at(n, at, reason);
    if cached >= prompt {
        return None;
    }
    if raw > live {
        let reason = if raw_in_flight {
            BreakReason::InFlight
        } else {
            gone
        };
        return stop_at(live, reason);
    }
    if seen.stored_any > seen.stored_visible && whole(seen.stored_any) > live {
        return stop_at(live.max(seen.stored_visible), BreakReason::InFlight);
    }
    if whole(seen.stored_visible) > live {
        // Stored whole segments beyond the live match are gone (segment-level evidence; block
        // caches only report it when a whole block is missing, handled above).
        return stop_at(live, gone);
    }
    if departure.is_some() {
        return departure;
    }
    if below_min {
        return stop_at(live, BreakReason::BelowMinimum);
    }
    // The prompt departs from everything seen before at `seen.seen` (a segment boundary); when
    // the match reaches that point, up to the cache's granularity, the change is the cause.
    if seen.seen < prompt && !seen.extends && (live >= seen.seen || seen.seen < cached + unit) {
        return stop_at(live.max(seen.seen), BreakReason::PrefixChanged);
    }
    let matched = live.max(seen.stored_visible);
    if cached < matched {
        return stop_at(matched, BreakReason::Rounding);
    }
    if seen.seen > matched {
        return stop_at(matched, BreakReason::NotWritten);
    }
    stop_at(matched, BreakReason::PrefixChanged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{Level, Request, RequestSettings, Role, SegmentKind};

    fn seg(id: u64, level: Level, len: usize) -> Arc<Segment> {
        Arc::new(Segment {
            id,
            level,
            kind: SegmentKind::Message(Role::User),
            label: format!("s{id}"),
            tokens: (0..len as u32).collect::<Vec<_>>().into(),
            breakpoint: None,
        })
    }

    fn request(segments: Vec<Arc<Segment>>) -> Request {
        Request {
            index: 0,
            stream: "main".into(),
            step: 0,
            model: "m".into(),
            sent_at_ms: 0,
            segments,
            settings: RequestSettings::default(),
            reply: Vec::new(),
            output_tokens: 0,
        }
    }

    #[test]
    fn keeps_the_identical_prefix_and_matches_a_full_recomputation() {
        let a: Vec<_> = (0..20)
            .map(|i| seg(i, Level::Messages, 3 + i as usize))
            .collect();
        let mut c = Cursor::default();
        assert_eq!(c.advance(&request(a[..12].to_vec()), [0; 3]).keep, 0);
        // Same first 10 (same Arcs), then two new segments with equal ids but other Arcs:
        // identity, not id, decides what is kept.
        let mut b = a[..10].to_vec();
        b.push(seg(10, Level::Messages, 13));
        b.extend(a[11..20].iter().cloned());
        assert_eq!(c.advance(&request(b.clone()), [0; 3]).keep, 10);
        assert_eq!(c.hashes(), common::segment_hashes(b.iter()).as_slice());
        assert_eq!(c.ends(), common::segment_ends(&b).as_slice());
        // Lengths 3..=22: total = sum = 250.
        assert_eq!(c.total(), 250);
        // Other salts: nothing is kept.
        assert_eq!(c.advance(&request(b.clone()), [0, 1, 2]).keep, 0);
    }

    /// A hinted advance keeps what an unhinted one keeps: past the hinted prefix the cursor
    /// still compares, a hint for another list or another base is ignored, and the store of
    /// the same request keeps the whole prompt.
    #[test]
    fn a_sent_hint_changes_no_keep() {
        let a: Vec<_> = (0..30)
            .map(|i| seg(i, Level::Messages, 2 + i as usize))
            .collect();
        let (mut hinted, mut plain) = (Cursor::default(), Cursor::default());
        let first = request(a[..10].to_vec());
        let h1 = SentHint::new(&first.segments, 0, 0);
        with_hint(h1, || hinted.advance(&first, [0; 3]));
        plain.advance(&first, [0; 3]);
        // The next request shares 10 segments, the hint claims 6 of them.
        let second = request(a[..20].to_vec());
        let h2 = SentHint::new(&second.segments, h1.serial(), 6);
        let got = with_hint(h2, || hinted.advance(&second, [0; 3]));
        assert_eq!(got, plain.advance(&second, [0; 3]));
        assert_eq!(got.keep, 10);
        // The store of the same request: everything kept.
        assert_eq!(with_hint(h2, || hinted.advance(&second, [0; 3])).keep, 20);
        // A hint naming another base (or another list) is ignored: a full compare finds 5.
        let mut third = a[..5].to_vec();
        third.push(seg(99, Level::Messages, 4));
        let third = request(third);
        let wrong = SentHint::new(&third.segments, h1.serial(), 6);
        let got = with_hint(wrong, || hinted.advance(&third, [0; 3]));
        assert_eq!(got, plain.advance(&third, [0; 3]));
        assert_eq!(got.keep, 5);
        let elsewhere = SentHint::new(&second.segments, 0, 0);
        let fourth = request(a[..8].to_vec());
        let got = with_hint(elsewhere, || hinted.advance(&fourth, [0; 3]));
        assert_eq!(got, plain.advance(&fourth, [0; 3]));
        assert_eq!(hinted.hashes(), plain.hashes());
    }

    #[test]
    fn stop_at_agrees_with_the_linear_scan() {
        let segs = vec![
            seg(1, Level::Tools, 4),
            seg(2, Level::System, 0),
            seg(3, Level::Messages, 5),
            seg(4, Level::Messages, 0),
        ];
        let req = request(segs.clone());
        let mut c = Cursor::default();
        c.advance(&req, [0; 3]);
        for at in 0..=10 {
            let want = common::stop_at(&req, at, BreakReason::PrefixChanged);
            assert_eq!(
                c.stop_at(segs.len(), at, BreakReason::PrefixChanged),
                want,
                "{at}"
            );
        }
        assert_eq!(c.segment_at(4), Some(2));
    }

    #[test]
    fn same_name_compares_every_byte() {
        let names = [
            "",
            "a",
            "main",
            "claude-sonnet-4-5",
            "claude-sonnet-4-6",
            "claude-sonnet-4",
        ];
        for a in names {
            for b in names {
                assert_eq!(same_name(a, b), a == b, "{a} {b}");
            }
        }
        assert!(!same_name("xlaude-sonnet-4-5", "claude-sonnet-4-5"));
    }

    /// Past the indexed size, names are found through the index as they were by the scan.
    #[test]
    fn by_name_finds_every_name_past_the_index_size() {
        let mut m: ByName<usize> = ByName::default();
        for i in 0..40 {
            assert_eq!(*m.get_or_insert_with(&format!("s{i}"), || i), i);
        }
        for i in (0..40).rev() {
            let name = format!("s{i}");
            assert_eq!(m.position(&name), Some(i));
            assert_eq!(m.get_mut(&name).copied(), Some(i));
            assert_eq!(*m.get_or_insert_with(&name, || 99), i);
        }
        assert!(!m.contains("s40"));
        assert_eq!(*m.get_or_insert_with("s40", || 40), 40);
        assert_eq!(m.position("s40"), Some(40));
        assert_eq!(m.iter().count(), 41);
    }

    #[test]
    fn same_prefix_counts_past_whole_chunks() {
        let a: Vec<_> = (0..19).map(|i| seg(i, Level::Messages, 1)).collect();
        let mut b = a.clone();
        assert_eq!(same_prefix(&a, &b), 19);
        b[17] = seg(17, Level::Messages, 1);
        assert_eq!(same_prefix(&a, &b), 17);
        b[3] = seg(3, Level::Messages, 1);
        assert_eq!(same_prefix(&a, &b), 3);
        assert_eq!(same_prefix(&a[..5], &a), 5);
        // Past whole chunks of 32, and a difference inside the second chunk.
        let long: Vec<_> = (0..100).map(|i| seg(i, Level::Messages, 1)).collect();
        let mut other = long.clone();
        assert_eq!(same_prefix(&long, &other), 100);
        assert_eq!(same_prefix(&long[..64], &other), 64);
        other[95] = seg(95, Level::Messages, 1);
        assert_eq!(same_prefix(&long, &other), 95);
        other[40] = seg(40, Level::Messages, 1);
        assert_eq!(same_prefix(&long, &other), 40);
    }

    /// No two of these chains share a hash: every one-token block after the same start, every
    /// chain of two one-token blocks, and chains of two 16-token blocks of consecutive ids (a
    /// block and the next share 15 tokens, shifted by one), in either order: what a weak fold
    /// would confuse. The same block after another chain hashes apart too.
    #[test]
    fn chained_hashes_tell_blocks_and_orders_apart() {
        let one = |prev, t: u32| chain_hash(prev, &t.to_le_bytes());
        let mut seen = std::collections::HashSet::new();
        for t in 0..1u32 << 18 {
            assert!(seen.insert(one(0, t)), "one-token block {t}");
        }
        for a in 0..600u32 {
            let h = one(0, a);
            for b in 0..600u32 {
                assert!(seen.insert(one(h, b)), "chain {a}, {b}");
            }
        }
        let block = |k: u32| -> Vec<u8> { (k..k + 16).flat_map(u32::to_le_bytes).collect() };
        for a in 0..300u32 {
            for b in 0..300u32 {
                let h = chain_hash(chain_hash(0, &block(a)), &block(b));
                assert!(seen.insert(h), "blocks {a}, {b}");
            }
        }
        assert_ne!(chain_hash(0, &block(7)), chain_hash(1, &block(7)));
    }

    /// Block hashes from the cursor equal chained hashes over the flat token bytes, block by
    /// block, and survive a request that keeps only part of the previous segments.
    #[test]
    fn block_hashes_match_a_flat_computation() {
        let flat_hashes = |segs: &[Arc<Segment>], block: usize| {
            let bytes: Vec<u8> = segs
                .iter()
                .flat_map(|s| s.tokens.iter().flat_map(|t| t.to_le_bytes()))
                .collect();
            let mut prev = 0u64;
            bytes
                .chunks_exact(block * 4)
                .map(|c| {
                    prev = chain_hash(prev, c);
                    prev
                })
                .collect::<Vec<u64>>()
        };
        let a: Vec<_> = (0..9)
            .map(|i| seg(i, Level::Messages, 3 + 2 * i as usize))
            .collect();
        let mut st = AutoStream::default();
        st.advance(&request(a[..6].to_vec()), 4);
        assert_eq!(st.block_hashes(4), flat_hashes(&a[..6], 4).as_slice());
        let mut b = a[..4].to_vec();
        b.push(seg(40, Level::Messages, 11));
        b.extend(a[6..].iter().cloned());
        let adv = st.advance(&request(b.clone()), 4);
        assert_eq!(adv.keep, 4);
        assert_eq!(st.block_hashes(4), flat_hashes(&b, 4).as_slice());
    }
}
