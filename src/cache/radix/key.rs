//! An edge's tokens borrowed from the segments they came from, and a request's tokens read in
//! place from its cursor.
//!
//! A new edge's key is a list of runs of the request's segments (each run holds its segment),
//! not a copy of the tokens: storing a request copies no token. Comparing a key with a request
//! reads both in place, and a run that is the very same stretch of the very same token slice as
//! the request's (same address) is equal without reading its tokens: the key holds that
//! segment alive, so the address cannot have been reused.

use std::sync::Arc;

use smallvec::SmallVec;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::super::cursor::Cursor;
use crate::prompt::{Segment, TokenId};

/// A run of one segment's tokens.
#[derive(Debug, Clone)]
struct Piece {
    /// The segment (shared with the requests that carry it, kept alive by the key; its
    /// reference count sits beside the fields the cursor just read, where a count on its token
    /// slice was a cache miss per run).
    seg: Arc<Segment>,
    /// Index of the run's first token in `tokens`.
    lo: u32,
    /// Index after the run's last token in `tokens`.
    hi: u32,
}

impl Piece {
    /// The run's tokens.
    fn slice(&self) -> &[TokenId] {
        &self.seg.tokens[self.lo as usize..self.hi as usize]
    }
}

/// A key's runs, up to three held in the key itself: a chat turn's new edge is the reply, the
/// new message and the next reply, so most keys allocate nothing, where a `Vec` was one
/// allocation and one free per node (radix 94-97 µs to 87-90 µs in `cache_models`;
/// docs/performance.md, "radix: a key's runs held in the node").
type Pieces = SmallVec<[Piece; 3]>;

/// An edge's token run, as runs of segments' tokens.
#[derive(Debug, Clone, Default)]
pub(super) struct Key {
    /// The runs, in order; none is empty.
    pieces: Pieces,
    /// Tokens over all runs.
    len: usize,
}

/// The key of a page of tokens among a node's children: the tokens themselves for pages of
/// one or two tokens (SGLang's default page is one token), else a chained xxh3 of them, which
/// a lookup checks against the child's key. `tokens` yields at most `page` tokens.
pub(super) fn page_key(tokens: impl Iterator<Item = TokenId>) -> u64 {
    let chain = |h: u64, x: u64| xxh3_64_with_seed(&(x as TokenId).to_le_bytes(), h);
    let mut n = 0usize;
    let (mut first, mut second, mut h) = (0u64, 0u64, 0u64);
    for x in tokens {
        match n {
            0 => first = u64::from(x),
            1 => second = u64::from(x),
            // Hashed only from a third token on (a page of one or two is its own key).
            2 => h = chain(chain(chain(0, first), second), u64::from(x)),
            _ => h = chain(h, u64::from(x)),
        }
        n += 1;
    }
    match n {
        1 => first,
        2 => first << 32 | second,
        _ => h,
    }
}

impl Key {
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of runs (the work of building the key).
    pub fn runs(&self) -> usize {
        self.pieces.len()
    }

    /// The key's tokens as slices, from token `from` on.
    fn slices_from(&self, from: usize) -> impl Iterator<Item = &[TokenId]> {
        let mut skip = from;
        self.pieces.iter().filter_map(move |p| {
            let s = p.slice();
            if skip >= s.len() {
                skip -= s.len();
                return None;
            }
            let s = &s[skip..];
            skip = 0;
            Some(s)
        })
    }

    /// [`page_key`] of the key's first `page` tokens.
    pub fn page_key(&self, page: usize) -> u64 {
        page_key(
            self.slices_from(0)
                .flat_map(|s| s.iter().copied())
                .take(page),
        )
    }

    /// Splits the key after `at` tokens: keeps the first `at`, returns the rest.
    pub fn split_off(&mut self, at: usize) -> Key {
        let rest = self.len - at;
        let mut before = 0usize;
        let k = self
            .pieces
            .iter()
            .position(|p| {
                before += (p.hi - p.lo) as usize;
                before > at
            })
            .unwrap_or(self.pieces.len());
        let mut lower: Pieces = self.pieces.drain(k.min(self.pieces.len())..).collect();
        if let Some(first) = lower.first_mut() {
            let cut = first.hi - (before - at) as u32;
            if cut > first.lo {
                self.pieces.push(Piece {
                    seg: first.seg.clone(),
                    lo: first.lo,
                    hi: cut,
                });
                first.lo = cut;
            }
        }
        self.len = at;
        Key {
            pieces: lower,
            len: rest,
        }
    }
}

/// Two equal-length runs' common prefix length: none read when they are the same memory, one
/// comparison when they are equal, token by token only where they differ.
fn common_run(a: &[TokenId], b: &[TokenId]) -> usize {
    if std::ptr::eq(a.as_ptr(), b.as_ptr()) || a == b {
        a.len()
    } else {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    }
}

/// The tokens of a sequence from `base` to `end` (a stretch of a cursor's tokens), read in
/// place from the cursor's segments.
pub(super) struct Tail<'a> {
    /// Where the tokens come from.
    cursor: &'a Cursor,
    /// Position of the first token (in the cursor's tokens).
    pub base: usize,
    /// Position after the last token.
    pub end: usize,
    /// A segment at or before the one holding the last position read (found on first use).
    seg: Option<usize>,
}

impl<'a> Tail<'a> {
    /// Tokens `base..end` of `cursor`.
    pub fn new(cursor: &'a Cursor, base: usize, end: usize) -> Self {
        Tail {
            cursor,
            base,
            end: end.max(base),
            seg: None,
        }
    }

    /// The index of the segment holding token `pos` (the segment count past the end), walking
    /// on from the last one found.
    fn locate(&mut self, pos: usize) -> usize {
        let ends = self.cursor.ends();
        let mut i = match self.seg {
            Some(i) if self.cursor.start(i) as usize <= pos => i,
            _ => super::segment_near_end(self.cursor, pos),
        };
        while i < ends.len() && ends[i] as usize <= pos {
            i += 1;
        }
        self.seg = Some(i);
        i
    }

    /// The tokens from `pos` on, one segment's run at a time, clipped to the end.
    fn runs_from(&mut self, pos: usize) -> impl Iterator<Item = &'a [TokenId]> {
        let first = self.locate(pos);
        let (cursor, end) = (self.cursor, self.end);
        let segs = &cursor.segments()[first.min(cursor.len())..];
        segs.iter().enumerate().map_while(move |(j, s)| {
            let start = cursor.start(first + j) as usize;
            (start < end).then(|| {
                let lo = pos.saturating_sub(start).min(s.len());
                let hi = (end - start).min(s.len()).max(lo);
                &s.tokens[lo..hi]
            })
        })
    }

    /// [`page_key`] of the `page` tokens from `pos`.
    pub fn page_key(&mut self, pos: usize, page: usize) -> u64 {
        // Usually the page lies inside one segment: read it in place.
        let i = self.locate(pos);
        if let Some(s) = self.cursor.segments().get(i) {
            let lo = pos - self.cursor.start(i) as usize;
            let hi = lo + page.min(self.end.saturating_sub(pos));
            if hi <= s.len() {
                return page_key(s.tokens[lo..hi].iter().copied());
            }
        }
        page_key(
            self.runs_from(pos)
                .flat_map(|s| s.iter())
                .copied()
                .take(page),
        )
    }

    /// How many tokens from `pos` (up to `to` and the end) equal `key`'s from `koff`.
    pub fn common(&mut self, key: &Key, koff: usize, pos: usize, to: usize) -> usize {
        let limit = to.min(self.end).saturating_sub(pos);
        let mut done = 0usize;
        let mut runs = self.runs_from(pos);
        let mut r: &[TokenId] = &[];
        for mut k in key.slices_from(koff) {
            while !k.is_empty() && done < limit {
                if r.is_empty() {
                    match runs.next() {
                        Some(next) => r = next,
                        None => return done,
                    }
                    continue;
                }
                let n = k.len().min(r.len()).min(limit - done);
                let same = common_run(&k[..n], &r[..n]);
                done += same;
                if same < n {
                    return done;
                }
                (k, r) = (&k[n..], &r[n..]);
            }
            if done >= limit {
                break;
            }
        }
        done
    }

    /// The tokens from `pos` to the end as a new key (runs of the segments, no token copied).
    pub fn key_from(&mut self, pos: usize) -> Key {
        let first = self.locate(pos);
        let (cursor, end) = (self.cursor, self.end);
        // One run per segment up to the one holding the last token (sized once, not grown).
        let last =
            cursor.ends()[first.min(cursor.len())..].partition_point(|&e| (e as usize) < end);
        let mut key = Key {
            pieces: Pieces::with_capacity(last + 1),
            len: 0,
        };
        for (j, s) in cursor.segments()[first.min(cursor.len())..]
            .iter()
            .enumerate()
        {
            let start = cursor.start(first + j) as usize;
            if start >= end {
                break;
            }
            let lo = pos.saturating_sub(start).min(s.len());
            let hi = (end - start).min(s.len());
            if hi > lo {
                key.len += hi - lo;
                key.pieces.push(Piece {
                    seg: s.clone(),
                    lo: lo as u32,
                    hi: hi as u32,
                });
            }
        }
        key
    }
}
