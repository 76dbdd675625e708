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
        let shared = prev.iter().zip(ids).take_while(|(a, b)| a == b).count();
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

    /// Ids kept in the buffer.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.buf.len()
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
}
