//! Byte-pair merging of one piece (a piece that is not itself a token): start from single bytes
//! and repeatedly merge the adjacent pair whose joined bytes have the lowest rank, the leftmost
//! such pair on a tie, until no adjacent pair is a token. This is the rule tiktoken applies
//! (ranks double as merge priorities: the BPE files list tokens in merge order), so the ids are
//! tiktoken's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::ranks::Ranks;

/// Pieces up to this many bytes merge by rescanning a short list on the stack; longer ones use a
/// heap.
const SMALL: usize = 64;

/// Appends the ids of `piece` (at least 2 bytes, every single byte a token) to `out`.
pub fn merge(ranks: &Ranks, piece: &[u8], out: &mut Vec<u32>) {
    if piece.len() <= SMALL {
        merge_small(ranks, piece, out)
    } else {
        merge_large(ranks, piece, out)
    }
}

/// The rank of `bytes`, or `u32::MAX` when they are no token.
#[inline]
fn rank(ranks: &Ranks, bytes: &[u8]) -> u32 {
    ranks.get(bytes).unwrap_or(u32::MAX)
}

/// Quadratic in the number of parts, which is small: `starts[..=parts]` are where the parts
/// begin (the last entry is the piece's end), `pair[k]` the rank of parts `k` and `k + 1`
/// joined.
fn merge_small(ranks: &Ranks, piece: &[u8], out: &mut Vec<u32>) {
    let n = piece.len();
    let mut starts = [0usize; SMALL + 1];
    let mut pair = [u32::MAX; SMALL];
    for (i, s) in starts[..=n].iter_mut().enumerate() {
        *s = i;
    }
    for (i, r) in pair[..n - 1].iter_mut().enumerate() {
        *r = rank(ranks, &piece[i..i + 2]);
    }
    let mut parts = n;
    while parts > 1 {
        // The leftmost lowest rank.
        let (mut k, mut best) = (0, u32::MAX);
        for (i, &r) in pair[..parts - 1].iter().enumerate() {
            if r < best {
                (k, best) = (i, r);
            }
        }
        if best == u32::MAX {
            break;
        }
        // Join parts k and k + 1, then re-rank the pairs on either side of the new part.
        starts.copy_within(k + 2..=parts, k + 1);
        pair.copy_within(k + 1..parts - 1, k);
        parts -= 1;
        if k + 1 < parts {
            pair[k] = rank(ranks, &piece[starts[k]..starts[k + 2]]);
        }
        if k > 0 {
            pair[k - 1] = rank(ranks, &piece[starts[k - 1]..starts[k + 1]]);
        }
    }
    for w in starts[..=parts].windows(2) {
        out.push(rank(ranks, &piece[w[0]..w[1]]));
    }
}

/// The same merge for long pieces, O(n log n): live parts form a linked list over their start
/// bytes, and a min-heap holds candidate pairs as (rank, start of the left part); an entry is
/// stale when its left part died or its pair's rank changed since it was pushed.
fn merge_large(ranks: &Ranks, piece: &[u8], out: &mut Vec<u32>) {
    let n = piece.len();
    // next[i]: start of the part after the live part starting at i (n at the end).
    let mut next: Vec<usize> = (1..=n).collect();
    // prev[i]: start of the part before it (usize::MAX for the first).
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    // pair[i]: the current rank of the live part at i joined with its successor.
    let mut pair = vec![u32::MAX; n];
    let mut alive = vec![true; n];
    let mut heap = BinaryHeap::with_capacity(n);
    let pair_rank = |next: &[usize], i: usize| match next[i] {
        j if j < n => rank(ranks, &piece[i..next[j]]),
        _ => u32::MAX,
    };
    for (i, r) in pair[..n - 1].iter_mut().enumerate() {
        *r = pair_rank(&next, i);
        if *r != u32::MAX {
            heap.push(Reverse((*r, i)));
        }
    }
    while let Some(Reverse((r, i))) = heap.pop() {
        if !alive[i] || pair[i] != r {
            continue;
        }
        let j = next[i];
        alive[j] = false;
        next[i] = next[j];
        if next[i] < n {
            prev[next[i]] = i;
        }
        for k in [i, prev[i]] {
            if k < n {
                pair[k] = pair_rank(&next, k);
                if pair[k] != u32::MAX {
                    heap.push(Reverse((pair[k], k)));
                }
            }
        }
    }
    let mut i = 0;
    while i < n {
        out.push(rank(ranks, &piece[i..next[i]]));
        i = next[i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy vocabulary: every byte, then merges in rank order.
    fn toy() -> Ranks {
        let merges = ["aa", "ab", "aab", "ba", "aaaa", "bab"].map(|t| t.as_bytes().to_vec());
        let tokens = (0..=255u8).map(|b| vec![b]).chain(merges);
        Ranks::new(262, tokens)
    }

    #[test]
    fn small_and_large_merges_agree_on_hand_checked_pieces() {
        let r = toy();
        // "aaab": aa(256) at 0 first (leftmost of the two "aa"), then "aa"+"ab"? No pair
        // "aaab" exists; parts aa|a|b: pairs "aaa" (none), "ab" (257) → aa|ab.
        for (piece, want) in [
            ("aaab", vec![256, 257]),
            ("aaaa", vec![260]),
            ("abab", vec![257, 257]),
            ("bab", vec![261]),
            ("xyz", vec![120, 121, 122]),
        ] {
            let mut small = Vec::new();
            merge_small(&r, piece.as_bytes(), &mut small);
            let mut large = Vec::new();
            merge_large(&r, piece.as_bytes(), &mut large);
            assert_eq!(small, want, "{piece}");
            assert_eq!(large, want, "{piece}");
        }
    }
}
