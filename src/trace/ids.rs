//! A request's block hash ids, kept once per stream.
//!
//! A conversation's prompts grow: each one repeats the previous one's ids and adds a few, so a
//! trace lists most ids once per request (the 710 kv-cache-tester traces name 94 million ids
//! for 3.5 million blocks). A stream's requests therefore share one buffer, each one a range of
//! it: a request that continues the previous one appends only its new ids, one that is a prefix
//! of it adds nothing, and one that departs from it appends its ids whole. Memory follows the
//! stream's new blocks, not the sum of its prompts.

use std::ops::{Deref, Range};
use std::sync::Arc;

/// One request's hash ids: a range of its stream's shared buffer. Reads as a `[u64]`.
#[derive(Clone, Default)]
pub struct HashIds {
    /// The stream's ids (shared by its requests).
    buf: Arc<[u64]>,
    /// This request's part of `buf`.
    range: Range<usize>,
}

impl HashIds {
    /// The ids as a slice.
    pub fn as_slice(&self) -> &[u64] {
        &self.buf[self.range.clone()]
    }
}

impl Deref for HashIds {
    type Target = [u64];

    fn deref(&self) -> &[u64] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a HashIds {
    type Item = &'a u64;
    type IntoIter = std::slice::Iter<'a, u64>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// Ids held alone (no stream buffer to share).
impl From<Vec<u64>> for HashIds {
    fn from(ids: Vec<u64>) -> Self {
        let range = 0..ids.len();
        HashIds {
            buf: ids.into(),
            range,
        }
    }
}

impl PartialEq for HashIds {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::fmt::Debug for HashIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

/// A stream's ids as its requests are read, in order; [`StreamIds::finish`] gives each
/// request's [`HashIds`].
#[derive(Default)]
pub(super) struct StreamIds {
    /// Every id kept so far.
    buf: Vec<u64>,
    /// Each request's range of `buf`, in request order.
    ranges: Vec<Range<usize>>,
}

impl StreamIds {
    /// Adds the next request's ids.
    pub fn push(&mut self, ids: &[u64]) {
        let last = self.ranges.last().cloned().unwrap_or(0..0);
        let prev = &self.buf[last.clone()];
        let shared = common_len(prev, ids);
        let range = if shared == ids.len() {
            // A prefix of the previous request (or the same ids): nothing new to keep.
            last.start..last.start + shared
        } else if shared == prev.len() && last.end == self.buf.len() {
            // It continues the previous request, whose ids end the buffer: only the new ones.
            self.buf.extend_from_slice(&ids[shared..]);
            last.start..self.buf.len()
        } else {
            let start = self.buf.len();
            self.buf.extend_from_slice(ids);
            start..self.buf.len()
        };
        self.ranges.push(range);
    }

    /// Each request's ids, in the order pushed.
    pub fn finish(self) -> impl Iterator<Item = HashIds> {
        let buf: Arc<[u64]> = self.buf.into();
        self.ranges.into_iter().map(move |range| HashIds {
            buf: buf.clone(),
            range,
        })
    }

    /// The ids of the last request pushed (none: empty).
    pub fn last(&self) -> &[u64] {
        self.ranges.last().map_or(&[], |r| &self.buf[r.clone()])
    }

    /// Ids kept in the buffer.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.buf.len()
    }
}

/// How many leading elements `a` and `b` share, compared a chunk at a time (a chunk's
/// equality is one wide comparison; the loop element by element is not vectorised).
fn common_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    const CHUNK: usize = 32;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Commas in `t`, counted in byte-wide sums of at most 255 (a sum as wide as the count took
/// two bytes a step).
fn commas(t: &[u8]) -> usize {
    t.chunks(255)
        .map(|c| usize::from(c.iter().map(|&b| u8::from(b == b',')).sum::<u8>()))
        .sum()
}

/// Reads the JSON array of ids whose text is `raw` into `out`, given the text and ids of the
/// stream's previous request (`prev`; empty text: none). The two texts' common start, up to its
/// last comma, is the previous request's leading ids, copied instead of parsed again: a trace
/// writes each prompt whole, so most of a request's ids are those. The rest is read as plain
/// integers (no sign, fraction, exponent or leading zero; JSON whitespace between them).
/// Returns false for any other text: the caller then has serde_json read it, which accepts or
/// rejects it as it always did.
pub(super) fn read_json_ids(raw: &str, prev: (&str, &[u64]), out: &mut Vec<u64>) -> bool {
    let r = raw.as_bytes();
    let common = common_len(r, prev.0.as_bytes());
    let cut = r[..common]
        .iter()
        .rposition(|&b| b == b',')
        .map_or(0, |i| i + 1);
    let kept = commas(&r[..cut]);
    let Some(leading) = prev.1.get(..kept) else {
        return false;
    };
    out.clear();
    out.extend_from_slice(leading);
    let mut at = Scan { r, i: cut };
    if cut == 0 {
        if !at.eat(b'[') {
            return false;
        }
        if at.eat(b']') {
            return at.end();
        }
    }
    loop {
        let Some(id) = at.integer() else {
            return false;
        };
        out.push(id);
        if at.eat(b']') {
            return at.end();
        }
        if !at.eat(b',') {
            return false;
        }
    }
}

/// Where the `[` is when `r` holds, from `at` on, a colon then a bracket, with JSON whitespace
/// around the colon (what follows an object's key whose value is an array).
pub(super) fn array_after_key(r: &[u8], at: usize) -> Option<usize> {
    let mut s = Scan { r, i: at };
    (s.eat(b':') && s.eat(b'[')).then(|| s.i - 1)
}

/// A position in a JSON text being read.
struct Scan<'a> {
    /// The text.
    r: &'a [u8],
    /// The next byte to read.
    i: usize,
}

impl Scan<'_> {
    /// Skips JSON whitespace.
    fn space(&mut self) {
        while self.r.get(self.i).is_some_and(|b| b" \t\n\r".contains(b)) {
            self.i += 1;
        }
    }

    /// Reads `b` after any whitespace, if it is next.
    fn eat(&mut self, b: u8) -> bool {
        self.space();
        let next = self.r.get(self.i) == Some(&b);
        self.i += usize::from(next);
        next
    }

    /// Reads an unsigned integer after any whitespace: digits, no leading zero, at most
    /// `u64::MAX` (anything else: `None`).
    fn integer(&mut self) -> Option<u64> {
        self.space();
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(d) = self.r.get(self.i).filter(|b| b.is_ascii_digit()) {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        (digits == 1 || (digits > 1 && self.r[start] != b'0')).then_some(v)
    }

    /// Only whitespace is left.
    fn end(&mut self) -> bool {
        self.space();
        self.i == self.r.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each request reads back its own ids; continuing and repeated prompts add only their new
    /// ids, and a prompt that departs from the previous one is kept whole.
    #[test]
    fn a_streams_requests_share_their_ids() {
        let prompts: [&[u64]; 6] = [
            &[1, 2, 3],
            &[1, 2, 3, 4, 5],
            &[1, 2, 3, 4, 5],
            &[1, 2],
            &[1, 2, 9],
            &[1, 2, 9, 10],
        ];
        let mut s = StreamIds::default();
        let mut kept = Vec::new();
        for p in prompts {
            s.push(p);
            kept.push(s.kept());
        }
        // 3, +2, +0, +0 (a prefix), then [1, 2, 9] whole (the previous request [1, 2] does not
        // end the buffer), then +1.
        assert_eq!(kept, [3, 5, 5, 5, 8, 9]);
        let ids: Vec<HashIds> = s.finish().collect();
        for (got, want) in ids.iter().zip(prompts) {
            assert_eq!(got.as_slice(), want);
            assert_eq!(got, &HashIds::from(want.to_vec()));
        }
        assert_eq!(format!("{:?}", ids[3]), "[1, 2]");
        assert_eq!(ids[1].iter().sum::<u64>(), 15);
        assert!(HashIds::default().is_empty());
    }

    /// A request's array is read whole, or from the last comma it shares with the previous
    /// request's text; whatever serde_json would read otherwise (or reject) is left to it.
    #[test]
    fn json_ids_are_read_past_the_text_shared_with_the_previous_request() {
        let read = |raw: &str, prev: (&str, &[u64])| {
            let mut out = vec![99];
            read_json_ids(raw, prev, &mut out).then_some(out)
        };
        let none: (&str, &[u64]) = ("", &[]);
        assert_eq!(read("[1,2,3]", none), Some(vec![1, 2, 3]));
        assert_eq!(
            read(" [ 10 ,\n 0 , 18446744073709551615 ] ", none),
            Some(vec![10, 0, u64::MAX])
        );
        assert_eq!(read("[]", none), Some(vec![]));
        assert_eq!(read("[ ]", none), Some(vec![]));
        // The shared text's ids come from the previous request, not from parsing: a previous
        // request given other ids for the same text shows which were copied.
        let prev: (&str, &[u64]) = ("[1,2,3]", &[7, 8, 9]);
        assert_eq!(read("[1,2,3,4]", prev), Some(vec![7, 8, 3, 4]));
        assert_eq!(read("[1,2,34]", prev), Some(vec![7, 8, 34]));
        assert_eq!(read("[1,2]", prev), Some(vec![7, 2]));
        assert_eq!(read("[5]", prev), Some(vec![5]));
        // A previous text that claims more ids than it had is not trusted.
        assert_eq!(read("[1,2,3,4]", ("[1,2,3]", &[7])), None);
        // Left to serde_json: not plain unsigned integers, or not one array.
        for bad in [
            "[01]",
            "[-1]",
            "[1.0]",
            "[1e3]",
            "[18446744073709551616]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[1]x",
            "[\"1\"]",
            "{}",
            "[",
            "",
        ] {
            assert_eq!(read(bad, none), None, "{bad}");
            assert!(serde_json::from_str::<Vec<u64>>(bad).is_err(), "{bad}");
        }
    }
}
