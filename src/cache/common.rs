//! Pieces every cache model shares: chained prefix hashes over segments and token blocks, the
//! record of what was stored (to explain a break), and `ReuseStop` construction.
//!
//! Hashes are chained (each one covers everything before it), so equal hashes mean equal
//! prefixes, as in vLLM's block hashes and Anthropic's cumulative prefix key (rules A3,
//! V3 in docs/cache-models.md). The per-stream memory that makes a request cost only what it adds (segment and block
//! hashes, walks of the explanation records) lives in `cursor.rs` and in [`SeenMemo`].

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64;

use super::BreakReason;
#[cfg(test)]
use super::ReuseStop;
use crate::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind, TokenId};

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
        work::add(1);
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A count of the work the cache models do, in debug builds only (tests are built so): every
/// probe, insert or removal of a hash-keyed map (one per key word hashed), every token hashed
/// into a block hash or compared against a cached run, every segment chained into a prefix hash,
/// every tree node or other stream visited. Release builds compile the counting away.
///
/// Not counted: the identity compare of a request's segments with its stream's previous ones
/// (`cursor::same_prefix`, a pointer compare per segment, 32 at a time) and the engine's own
/// work, which are linear in the segment count, not in tokens.
pub mod work {
    #[cfg(debug_assertions)]
    thread_local! {
        static UNITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Counts `n` units of work on this thread.
    #[inline(always)]
    pub(crate) fn add(n: u64) {
        #[cfg(debug_assertions)]
        UNITS.with(|u| u.set(u.get().wrapping_add(n)));
        #[cfg(not(debug_assertions))]
        let _ = n;
    }

    /// The units counted on this thread since the last call, and resets the count; `None` in
    /// release builds, which do not count.
    pub fn take() -> Option<u64> {
        #[cfg(debug_assertions)]
        return Some(UNITS.with(|u| u.replace(0)));
        #[cfg(not(debug_assertions))]
        None
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

#[cfg(test)]
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

#[cfg(test)]
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

#[cfg(test)]
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
#[derive(Debug)]
pub(crate) struct SeenPrefixes {
    /// What is known of each recorded prefix, by chained segment hash (one table, so a
    /// request's records and walks probe one place per prefix).
    prefixes: HashKeyed<u64, Prefix>,
}

/// What was recorded of one segment prefix.
#[derive(Debug, Clone, Copy, Default)]
struct Prefix {
    /// Earliest time the stored prefix became readable (`None`: never stored).
    stored: Option<u64>,
    /// Some earlier prompt contained the prefix, stored or not.
    seen: bool,
    /// Some recorded sequence continues past it (so a prompt that stops matching right after
    /// one changed something, while one that passes a sequence's end only extends it).
    continued: bool,
}

impl Default for SeenPrefixes {
    /// Sized for a few hundred prefixes (a long session records one per segment), so the
    /// table does not grow from empty in every replay.
    fn default() -> Self {
        SeenPrefixes {
            prefixes: HashKeyed::with_capacity_and_hasher(256, Default::default()),
        }
    }
}

/// [`SeenMatch`] counted in leading segments rather than tokens.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SegmentMatch {
    /// Leading segments stored and readable at the request's send time.
    pub stored_visible: usize,
    /// The same, including segments still being written.
    pub stored_any: usize,
    /// Leading segments any earlier prompt contained.
    pub seen: usize,
    /// The seen prefix is the whole of a recorded sequence (see [`SeenMatch::extends`]).
    pub extends: bool,
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
    /// What is recorded of prefix `h`, if anything.
    fn get(&self, h: &u64) -> Option<&Prefix> {
        self.prefixes.get(h)
    }

    /// When prefix `h` is stored and readable from, if it is stored.
    fn stored_at(&self, h: &u64) -> Option<u64> {
        self.get(h).and_then(|p| p.stored)
    }

    /// Whether prefix `h` is stored.
    fn is_stored(&self, h: &u64) -> bool {
        self.get(h).is_some_and(|p| p.stored.is_some())
    }

    /// Whether prefix `h` is stored or was seen.
    fn is_seen(&self, h: &u64) -> bool {
        self.get(h).is_some_and(|p| p.stored.is_some() || p.seen)
    }

    /// Whether some recorded sequence continues past prefix `h`.
    fn is_continued(&self, h: &u64) -> bool {
        self.get(h).is_some_and(|p| p.continued)
    }

    /// The record of prefix `h`, made empty when absent.
    fn entry(&mut self, h: u64) -> &mut Prefix {
        self.prefixes.entry(h).or_default()
    }

    #[cfg(test)]
    pub fn record_seen(&mut self, hashes: &[u64]) {
        for h in hashes {
            self.entry(*h).seen = true;
        }
        self.record_continued(hashes);
    }

    #[cfg(test)]
    /// Records that each prefix of the sequence `hashes` but the last is continued.
    pub fn record_continued(&mut self, hashes: &[u64]) {
        if let Some((_, init)) = hashes.split_last() {
            for h in init {
                self.entry(*h).continued = true;
            }
        }
    }

    /// Records stored prefixes, readable from `visible_at`.
    pub fn record_stored(&mut self, hashes: &[u64], visible_at: u64) {
        for h in hashes {
            let e = &mut self.entry(*h).stored;
            *e = Some(e.map_or(visible_at, |v| v.min(visible_at)));
        }
    }

    #[cfg(test)]
    pub fn matches(&self, hashes: &[u64], ends: &[u64], now: u64) -> SeenMatch {
        let mut m = SeenMatch::default();
        for (i, h) in hashes.iter().enumerate() {
            let stored = self.stored_at(h);
            let seen = self.is_seen(h);
            if !seen {
                break;
            }
            m.seen = ends[i];
            m.extends = !self.is_continued(h);
            let before = if i == 0 { 0 } else { ends[i - 1] };
            if let Some(vis) = stored {
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

/// What one stream already found in, or recorded into, a [`SeenPrefixes`], over the leading
/// hashes of its cursor: the walks and records of its next request resume from there instead of
/// going over the whole prompt again. The sets only grow and stored times only decrease, so a
/// fact learnt stays true (visibility needs the time it was learnt at).
#[derive(Debug, Default, Clone)]
pub(crate) struct SeenMemo {
    /// `[0, seen)` are stored or seen.
    seen: usize,
    /// `[0, stored)` are stored.
    stored: usize,
    /// `[0, visible)` are stored and readable from `visible_max` on.
    visible: usize,
    /// The latest time from which one of `[0, visible)` is readable: all are readable from then on.
    visible_max: u64,
    /// `[0, rec_seen)` were recorded seen, `[0, rec_cont)` continued.
    rec_seen: usize,
    /// `[0, rec_cont)` were recorded as continued.
    rec_cont: usize,
    /// `[0, rec_stored)` were recorded stored at times up to `rec_stored_max`.
    rec_stored: usize,
    /// The latest readable-from time among those records.
    rec_stored_max: u64,
}

impl SeenMemo {
    /// The cursor kept its first `k` hashes (and the model, when `same_model`).
    pub fn keep(&mut self, k: usize, same_model: bool) {
        if !same_model {
            *self = SeenMemo::default();
            return;
        }
        for c in [
            &mut self.seen,
            &mut self.stored,
            &mut self.visible,
            &mut self.rec_seen,
            &mut self.rec_cont,
            &mut self.rec_stored,
        ] {
            *c = (*c).min(k);
        }
    }
}

impl SeenPrefixes {
    /// [`SeenPrefixes::matches`] over `hashes` (a cursor's, see `Cursor::seen_match`),
    /// resuming from `memo`, in whole segments: how many leading segments are stored and
    /// readable at `now`, stored at all, and stored or seen, and whether the seen prefix is
    /// the whole of a recorded sequence.
    pub fn memo_match(&self, hashes: &[u64], now: u64, memo: &mut SeenMemo) -> SegmentMatch {
        if memo.visible_max > now {
            memo.visible = 0;
            memo.visible_max = 0;
        }
        while let Some(v) = hashes.get(memo.visible).and_then(|h| self.stored_at(h)) {
            if v > now {
                break;
            }
            memo.visible_max = memo.visible_max.max(v);
            memo.visible += 1;
        }
        memo.stored = memo.stored.max(memo.visible);
        while hashes.get(memo.stored).is_some_and(|h| self.is_stored(h)) {
            memo.stored += 1;
        }
        memo.seen = memo.seen.max(memo.stored);
        while hashes.get(memo.seen).is_some_and(|h| self.is_seen(h)) {
            memo.seen += 1;
        }
        SegmentMatch {
            stored_visible: memo.visible,
            stored_any: memo.stored,
            seen: memo.seen,
            extends: memo.seen > 0 && !self.is_continued(&hashes[memo.seen - 1]),
        }
    }

    /// [`SeenPrefixes::record_seen`] of `hashes[..n]`, skipping what `memo` says is recorded.
    pub fn record_seen_from(&mut self, hashes: &[u64], n: usize, memo: &mut SeenMemo) {
        for h in &hashes[memo.rec_seen.min(n)..n] {
            self.entry(*h).seen = true;
        }
        memo.rec_seen = memo.rec_seen.max(n);
        memo.seen = memo.seen.max(n);
        self.record_continued_from(hashes, n, memo);
    }

    /// [`SeenPrefixes::record_continued`] of `hashes[..n]`, skipping what `memo` says is recorded.
    pub fn record_continued_from(&mut self, hashes: &[u64], n: usize, memo: &mut SeenMemo) {
        let upto = n.saturating_sub(1);
        for h in &hashes[memo.rec_cont.min(upto)..upto] {
            self.entry(*h).continued = true;
        }
        memo.rec_cont = memo.rec_cont.max(upto);
    }

    /// [`SeenPrefixes::record_stored`] of `hashes[a..b]` at `visible_at`, skipping what `memo`
    /// says is recorded at that time or earlier.
    pub fn record_stored_from(
        &mut self,
        hashes: &[u64],
        (a, b): (usize, usize),
        visible_at: u64,
        memo: &mut SeenMemo,
    ) {
        let from = if visible_at >= memo.rec_stored_max {
            a.max(memo.rec_stored.min(b))
        } else {
            a
        };
        self.record_stored(&hashes[from..b], visible_at);
        if a <= memo.rec_stored && a < b {
            memo.rec_stored = memo.rec_stored.max(b);
            memo.rec_stored_max = memo.rec_stored_max.max(visible_at);
        }
        memo.seen = memo.seen.max(memo.rec_stored);
    }
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

/// Reasoning tokens of a request: everything generated beyond the visible reply
/// (`output_tokens` counts both; the scenario's `reasoning_tokens`).
pub fn reasoning_tokens(req: &Request) -> u64 {
    let visible: u64 = req.reply.iter().map(|s| s.len() as u64).sum();
    req.output_tokens.saturating_sub(visible)
}

/// The tokens an automatic cache holds after a request: what the engine generated follows the
/// prompt in the order it was generated, reasoning first, then the visible reply (§8; vLLM and
/// SGLang cache decode tokens, OpenAI caches the output too). The next prompt repeats the reply
/// but not the reasoning, so with reasoning the shared prefix ends at the previous prompt.
///
/// Reasoning tokens never reappear in a prompt: each request's get ids of their own, above any
/// tokenizer's vocabulary (`REASONING_BASE` and up), numbered in the order the model sees them.
#[derive(Debug, Default)]
pub(crate) struct ReasoningIds {
    /// Reasoning tokens handed out so far: the next one's offset above `REASONING_BASE`
    /// (wrapping within the ids left).
    next: u64,
}

/// First token id used for reasoning tokens (tokenizers and synthetic ids stay below 2^31).
pub const REASONING_BASE: u32 = 1 << 31;

impl ReasoningIds {
    /// The reasoning segment of `req` (`None` without reasoning tokens), with ids of its own:
    /// what the model generated before the visible reply.
    pub fn reasoning(&mut self, req: &Request) -> Option<Arc<Segment>> {
        let n = reasoning_tokens(req);
        if n == 0 {
            return None;
        }
        let start = self.next;
        self.next += n;
        let span = u64::from(u32::MAX - REASONING_BASE) + 1;
        // Collected straight into the shared slice (one allocation, no copy).
        let tokens: Arc<[TokenId]> = (start..start + n)
            .map(|i| REASONING_BASE + (i % span) as u32)
            .collect();
        Some(Arc::new(Segment {
            // Ids of prompt content are content hashes; this one is unique to the request.
            id: reasoning_id(start),
            level: Level::Messages,
            kind: SegmentKind::Message(Role::Assistant),
            label: "reasoning".into(),
            tokens,
            breakpoint: None,
        }))
    }
}

/// The content id of the reasoning segment whose first token is number `start`: the xxh3 of
/// `reasoning#<start>`, written on the stack instead of formatted into a new string.
fn reasoning_id(start: u64) -> u64 {
    use std::io::Write;
    let mut buf = [0u8; 32];
    let mut w = &mut buf[..];
    write!(w, "reasoning#{start}").expect("a u64 fits in 32 bytes with the prefix");
    let len = 32 - w.len();
    xxh3_64(&buf[..len])
}

/// Salt of a level for Anthropic-style invalidation (A12): settings that invalidate system and
/// messages salt the system level; settings that invalidate messages salt the messages level.
///
/// Called on every lookup and store; the settings rarely change between requests, so the last
/// answer is kept per thread and the strings are formatted only when the settings differ.
pub(crate) fn level_salts(req: &Request) -> [u64; 3] {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(RequestSettings, [u64; 3])>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((s, salts)) if *s == req.settings => *salts,
            _ => {
                let salts = level_salts_of(&req.settings);
                *last = Some((req.settings.clone(), salts));
                salts
            }
        }
    })
}

/// [`level_salts`] computed.
fn level_salts_of(s: &RequestSettings) -> [u64; 3] {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(ids: &[u64]) -> Request {
        Request {
            index: 0,
            stream: "main".into(),
            step: 0,
            model: "m".into(),
            sent_at_ms: 0,
            segments: ids
                .iter()
                .map(|&id| {
                    Arc::new(Segment {
                        id,
                        level: Level::Messages,
                        kind: SegmentKind::Message(Role::User),
                        label: format!("s{id}"),
                        tokens: vec![id as u32; 1 + id as usize % 5].into(),
                        breakpoint: None,
                    })
                })
                .collect(),
            settings: Default::default(),
            reply: Vec::new(),
            output_tokens: 0,
        }
    }

    /// A reasoning segment's id is the hash of its formatted name.
    #[test]
    fn reasoning_ids_hash_the_formatted_name() {
        for start in [0, 7, 123_456, u64::MAX] {
            assert_eq!(
                reasoning_id(start),
                xxh3_64(format!("reasoning#{start}").as_bytes())
            );
        }
    }

    /// The kept answer is the computed one, whichever settings came before.
    #[test]
    fn level_salts_follow_the_settings() {
        let mut a = request(&[1]);
        let plain = level_salts_of(&a.settings);
        assert_eq!(level_salts(&a), plain);
        a.settings.tool_choice = Some("auto".into());
        let tool = level_salts_of(&a.settings);
        // tool_choice salts the messages level only.
        assert_eq!((tool[1], plain[1]), (plain[1], plain[1]));
        assert_ne!(tool[2], plain[2]);
        assert_eq!(level_salts(&a), tool);
        a.settings.tool_choice = None;
        assert_eq!(level_salts(&a), plain);
    }

    /// Two streams record into one `SeenPrefixes` through memos, interleaved, with growing,
    /// diverging and rewound prompts and times going back: every memoized walk answers what a
    /// walk from the start answers.
    #[test]
    fn memoized_walks_and_records_match_the_full_ones() {
        use super::super::cursor::Cursor;
        let mut reference = SeenPrefixes::default();
        let mut memoized = SeenPrefixes::default();
        let mut cursors = [Cursor::default(), Cursor::default()];
        let mut memos = [SeenMemo::default(), SeenMemo::default()];
        // (stream, prompt ids, time)
        let steps: &[(usize, &[u64], u64)] = &[
            (0, &[1, 2, 3], 10),
            (1, &[1, 2, 7], 11),
            (0, &[1, 2, 3, 4], 30),
            (1, &[1, 2, 3, 4, 5], 20),
            (0, &[1, 9], 40),
            (0, &[1, 9, 10, 11], 15),
            (1, &[1, 2, 3, 4, 5, 6], 50),
            (0, &[1, 2, 3, 4, 5, 6, 8], 60),
        ];
        for &(k, ids, t) in steps {
            let req = request(ids);
            let adv = cursors[k].advance(&req, [0; 3]);
            memos[k].keep(adv.keep, adv.same_model);
            let hashes = segment_hashes(req.segments.iter());
            let ends = segment_ends(&req.segments);
            let want = reference.matches(&hashes, &ends, t);
            let got = memoized.matches_from(&cursors[k], t, &mut memos[k]);
            assert_eq!(
                (got.seen, got.stored_any, got.stored_visible, got.extends),
                (
                    want.seen,
                    want.stored_any,
                    want.stored_visible,
                    want.extends
                ),
                "stream {k} at {t}"
            );
            // The prompt is seen; all but its last segment are stored, readable 5 later.
            let n = ids.len();
            reference.record_seen(&hashes);
            reference.record_stored(&hashes[..n - 1], t + 5);
            memoized.record_seen_from(cursors[k].hashes(), n, &mut memos[k]);
            memoized.record_stored_from(cursors[k].hashes(), (0, n - 1), t + 5, &mut memos[k]);
        }
    }
}
