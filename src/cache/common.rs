//! Pieces every cache model shares: chained prefix hashes over segments and token blocks, the
//! record of what was stored (to explain a break), and `ReuseStop` construction.
//!
//! Hashes are chained (each one covers everything before it), so equal hashes mean equal
//! prefixes, as in vLLM's block hashes and Anthropic's cumulative prefix key (CACHE_SEMANTICS A3,
//! V3). Segment hashes cost O(segments) per request; block hashes are memoized across the recent
//! requests so only tokens not seen in a recent request are hashed again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use super::{BreakReason, ReuseStop};
use crate::prompt::{Level, Request, Segment};

/// A hasher for keys that are already hashes (chained xxh3 values): mixes the written words with
/// one multiply instead of running SipHash over them.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.write_u64(xxh3_64(bytes));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by hashes.
pub(crate) type HashKeyed<K, V> = HashMap<K, V, BuildHasherDefault<PreHashed>>;
/// A set of hashes.
pub(crate) type HashSetKeyed<K> = HashSet<K, BuildHasherDefault<PreHashed>>;

/// Chained hash of a prefix ending with `seg`, given the hash of the prefix before it and a salt
/// for the segment's level (request settings that invalidate that level).
pub(crate) fn chain(prev: u64, seg: &Segment, salt: u64) -> u64 {
    let mut buf = [0u8; 24];
    buf[..8].copy_from_slice(&prev.to_le_bytes());
    buf[8..16].copy_from_slice(&seg.id.to_le_bytes());
    buf[16..].copy_from_slice(&salt.to_le_bytes());
    xxh3_64(&buf)
}

/// Chained hashes of every segment prefix of `segments` (no salts).
pub(crate) fn segment_hashes<'a>(segments: impl Iterator<Item = &'a Arc<Segment>>) -> Vec<u64> {
    let mut prev = 0u64;
    segments
        .map(|s| {
            prev = chain(prev, s, 0);
            prev
        })
        .collect()
}

/// Cumulative token ends of the segments: `ends[i]` = tokens up to and including segment `i`.
pub(crate) fn segment_ends(segments: &[Arc<Segment>]) -> Vec<u64> {
    let mut total = 0u64;
    segments
        .iter()
        .map(|s| {
            total += s.len() as u64;
            total
        })
        .collect()
}

/// The stop record for a request whose reuse ended at token `at` (the segment holding that
/// token, or the last segment when `at` is the end of the prompt).
pub(crate) fn stop_at(req: &Request, at: u64, reason: BreakReason) -> Option<ReuseStop> {
    let seg = req
        .segment_at_token(at)
        .or_else(|| req.segments.iter().rev().find(|s| !s.is_empty()))
        .or_else(|| req.segments.last())?;
    Some(ReuseStop {
        at_token: at,
        level: seg.level,
        segment: seg.label.clone(),
        reason,
    })
}

/// `Cold` when no model has anything cached yet, `ModelChanged` when another model has.
pub(crate) fn cold_reason(other_models_cached: bool) -> BreakReason {
    if other_models_cached {
        BreakReason::ModelChanged
    } else {
        BreakReason::Cold
    }
}

/// The segment prefixes an automatic cache has stored (prompt + visible reply) and those any
/// earlier prompt contained, keyed by chained segment hash. Used only to explain breaks: a
/// prefix that was stored and is now missing was evicted or expired; one that was only seen was
/// never written.
#[derive(Debug, Default)]
pub(crate) struct SeenPrefixes {
    /// hash -> earliest time the stored prefix became readable
    stored: HashKeyed<u64, u64>,
    seen: HashKeyed<u64, ()>,
    /// Prefixes some recorded sequence continues past (so a prompt that stops matching right
    /// after one changed something, while one that passes a sequence's end only extends it).
    continued: HashKeyed<u64, ()>,
}

/// How far a request's prompt matches what was stored / seen, in whole segments.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SeenMatch {
    /// Tokens of the longest stored segment prefix readable at the request's send time.
    pub stored_visible: u64,
    /// The same, including prefixes still being written.
    pub stored_any: u64,
    /// Tokens of the longest segment prefix any earlier prompt contained.
    pub seen: u64,
    /// The matched prefix is the whole of a recorded sequence: the prompt extends it rather
    /// than departing from it.
    pub extends: bool,
}

impl SeenPrefixes {
    pub fn record_seen(&mut self, hashes: &[u64]) {
        for h in hashes {
            self.seen.insert(*h, ());
        }
        self.record_continued(hashes);
    }

    /// Records that each prefix of the sequence `hashes` but the last is continued.
    pub fn record_continued(&mut self, hashes: &[u64]) {
        if let Some((_, init)) = hashes.split_last() {
            for h in init {
                self.continued.insert(*h, ());
            }
        }
    }

    /// Records stored prefixes, readable from `visible_at`.
    pub fn record_stored(&mut self, hashes: &[u64], visible_at: u64) {
        for h in hashes {
            let e = self.stored.entry(*h).or_insert(visible_at);
            *e = (*e).min(visible_at);
        }
    }

    pub fn matches(&self, hashes: &[u64], ends: &[u64], now: u64) -> SeenMatch {
        let mut m = SeenMatch::default();
        for (i, h) in hashes.iter().enumerate() {
            let stored = self.stored.get(h);
            let seen = stored.is_some() || self.seen.contains_key(h);
            if !seen {
                break;
            }
            m.seen = ends[i];
            m.extends = !self.continued.contains_key(h);
            let before = if i == 0 { 0 } else { ends[i - 1] };
            if let Some(&vis) = stored {
                if m.stored_any == before {
                    m.stored_any = ends[i];
                }
                if vis <= now && m.stored_visible == before {
                    m.stored_visible = ends[i];
                }
            }
        }
        m
    }
}

/// The previous prompt of each request stream (model and chained segment hashes), so a break can
/// be explained against what the stream sent last: the first segment that differs from it, or a
/// model change.
#[derive(Debug, Default)]
pub(crate) struct StreamHistory {
    last: HashMap<String, (String, Vec<u64>)>,
}

/// How a request relates to its stream's previous request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Departure {
    /// First request of the stream.
    First,
    /// The prompt extends (or repeats) the stream's previous prompt.
    Extends,
    /// The previous request ran on another model.
    ModelChanged,
    /// The prompt differs from the previous one from this segment on.
    ChangedAt(usize),
}

impl StreamHistory {
    pub fn departure(&self, req: &Request, hashes: &[u64]) -> Departure {
        let Some((model, prev)) = self.last.get(&req.stream) else {
            return Departure::First;
        };
        if model != &req.model {
            return Departure::ModelChanged;
        }
        match prev.iter().zip(hashes).position(|(a, b)| a != b) {
            Some(i) => Departure::ChangedAt(i),
            None if hashes.len() < prev.len() => Departure::ChangedAt(hashes.len()),
            None => Departure::Extends,
        }
    }

    pub fn record(&mut self, req: &Request, hashes: Vec<u64>) {
        self.last
            .insert(req.stream.clone(), (req.model.clone(), hashes));
    }
}

/// The stop for a request that departs from its stream's previous prompt, if it does.
pub(crate) fn departure_stop(req: &Request, d: Departure, ends: &[u64]) -> Option<ReuseStop> {
    match d {
        Departure::First | Departure::Extends => None,
        Departure::ModelChanged => stop_at(req, 0, BreakReason::ModelChanged),
        Departure::ChangedAt(i) => {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            stop_at(req, start, BreakReason::PrefixChanged)
        }
    }
}

/// Explains why an automatic cache (OpenAI legacy, paged, radix) reused `cached` tokens.
/// `live` is the matched length before the cache's own rounding and caps; `raw` the length that
/// would have matched had nothing expired or been evicted (`gone` says which of the two applies).
#[allow(clippy::too_many_arguments)]
pub(crate) fn automatic_stop(
    req: &Request,
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
    let prompt = req.prompt_tokens();
    if cached >= prompt {
        return None;
    }
    if raw > live {
        let reason = if raw_in_flight {
            BreakReason::InFlight
        } else {
            gone
        };
        return stop_at(req, live, reason);
    }
    if seen.stored_any > seen.stored_visible && whole(seen.stored_any) > live {
        return stop_at(req, live.max(seen.stored_visible), BreakReason::InFlight);
    }
    if whole(seen.stored_visible) > live {
        // Stored whole segments beyond the live match are gone (segment-level evidence; block
        // caches only report it when a whole block is missing, handled above).
        return stop_at(req, live, gone);
    }
    if departure.is_some() {
        return departure;
    }
    if below_min {
        return stop_at(req, live, BreakReason::BelowMinimum);
    }
    // The prompt departs from everything seen before at `seen.seen` (a segment boundary); when
    // the match reaches that point, up to the cache's granularity, the change is the cause.
    if seen.seen < prompt && !seen.extends && (live >= seen.seen || seen.seen < cached + unit) {
        return stop_at(req, live.max(seen.seen), BreakReason::PrefixChanged);
    }
    let matched = live.max(seen.stored_visible);
    if cached < matched {
        return stop_at(req, matched, BreakReason::Rounding);
    }
    if seen.seen > matched {
        return stop_at(req, matched, BreakReason::NotWritten);
    }
    stop_at(req, matched, BreakReason::PrefixChanged)
}

/// Chained hashes of the full `block`-token blocks of a segment sequence, memoized over the most
/// recent sequences: a request that extends a recent one hashes only its new blocks.
#[derive(Debug)]
pub(crate) struct BlockHasher {
    block: usize,
    /// (segment ids, block hashes) of recent sequences, most recent first.
    recent: VecDeque<(Vec<u64>, Arc<Vec<u64>>)>,
    keep: usize,
}

impl BlockHasher {
    pub fn new(block: usize) -> Self {
        BlockHasher {
            block: block.max(1),
            recent: VecDeque::new(),
            keep: 8,
        }
    }

    /// Block hashes of the concatenated tokens of `segments` (only full blocks).
    pub fn hashes(&mut self, segments: &[Arc<Segment>]) -> Arc<Vec<u64>> {
        let ids: Vec<u64> = segments.iter().map(|s| s.id).collect();
        let ends = segment_ends(segments);
        // Longest common segment prefix with a recent sequence.
        let mut best: Option<(usize, usize)> = None; // (recent index, common segments)
        for (i, (rids, _)) in self.recent.iter().enumerate() {
            let common = rids.iter().zip(&ids).take_while(|(a, b)| a == b).count();
            if best.is_none_or(|(_, c)| common > c) {
                best = Some((i, common));
            }
        }
        if let Some((i, common)) = best {
            if common == ids.len() && self.recent[i].0.len() == ids.len() {
                let hit = self.recent[i].1.clone();
                let entry = self.recent.remove(i).expect("index in range");
                self.recent.push_front(entry);
                return hit;
            }
        }
        let (mut hashes, start_block) = match best {
            Some((i, common)) if common > 0 => {
                let tokens = ends[common - 1] as usize;
                let reuse = tokens / self.block;
                let prev = &self.recent[i].1;
                (
                    prev[..reuse.min(prev.len())].to_vec(),
                    reuse.min(prev.len()),
                )
            }
            _ => (Vec::new(), 0),
        };
        let total = ends.last().copied().unwrap_or(0) as usize;
        let n_blocks = total / self.block;
        if start_block < n_blocks {
            // Walk tokens from the first block not reused.
            let mut buf: Vec<u8> = Vec::with_capacity(self.block * 4);
            let mut prev = hashes.last().copied().unwrap_or(0);
            let mut pos = 0usize;
            let from = start_block * self.block;
            for seg in segments {
                let len = seg.len();
                if pos + len <= from {
                    pos += len;
                    continue;
                }
                let skip = from.saturating_sub(pos);
                for t in &seg.tokens[skip..] {
                    buf.extend_from_slice(&t.to_le_bytes());
                    if buf.len() == self.block * 4 {
                        prev = xxh3_64_with_seed(&buf, prev);
                        hashes.push(prev);
                        buf.clear();
                    }
                }
                pos += len;
            }
        }
        let hashes = Arc::new(hashes);
        self.recent.push_front((ids, hashes.clone()));
        self.recent.truncate(self.keep);
        hashes
    }
}

/// Salt of a level for Anthropic-style invalidation (A12): settings that invalidate system and
/// messages salt the system level; settings that invalidate messages salt the messages level.
pub(crate) fn level_salts(req: &Request) -> [u64; 3] {
    let s = &req.settings;
    let system = xxh3_64(format!("{}|{}|{}", s.web_search, s.citations, s.fast).as_bytes());
    let messages = xxh3_64(
        format!(
            "{system}|{:?}|{:?}",
            s.tool_choice.as_deref(),
            s.thinking_budget
        )
        .as_bytes(),
    );
    [0, system, messages]
}

pub(crate) fn salt_for(salts: &[u64; 3], level: Level) -> u64 {
    match level {
        Level::Tools => salts[0],
        Level::System => salts[1],
        Level::Messages => salts[2],
    }
}
