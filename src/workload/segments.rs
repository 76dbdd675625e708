//! A trace request's prompt as segments: its hash blocks as synthetic token runs.
//!
//! Every distinct (trace, hash id) has one synthetic 64-token run, so equal hashes are equal
//! tokens. A prompt is cut into segments the way a harness sends content blocks: what it shares
//! with the stream's previous prompt keeps the previous segments (the one the break cuts is
//! cut there), and what is new is one segment per level (tools, system, messages). So a
//! request adds one or a few segments, as it adds a few content blocks on the wire (Anthropic's
//! breakpoint lookback counts those).
//!
//! The tokens past a prompt's last full block (its tail) are not hashed in the trace. When the
//! next request of the stream continues the prompt (shares every block and has more), the tail
//! is the start of that request's next block: it takes those tokens, and the next request keeps
//! it as a segment of its own, so a token-level cache reads it as it would read the real prompt.
//! Otherwise the tail is content of its own.

use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::prompt::{Level, Role, Segment, SegmentKind};
use crate::trace::Trace;

/// The synthetic tokens of one trace's hash ids (ids are local to a trace).
///
/// A block's tokens are a function of the trace and the hash id (see [`synthetic`]), computed
/// straight into the segment that holds them: no table of every block's tokens, and each
/// segment's tokens written once, in their final place.
pub(super) struct Blocks<'a> {
    /// The trace the ids belong to.
    trace: &'a Trace,
}

impl<'a> Blocks<'a> {
    pub(super) fn new(trace: &'a Trace) -> Self {
        Blocks { trace }
    }

    /// The content id of hash id `hash`'s synthetic tokens.
    fn block_id(&self, hash: u64) -> u64 {
        xxh3_64_with_seed(self.trace.id.as_bytes(), hash)
    }

    /// Tokens `from..to` of the prompt whose blocks are `ids` followed by `next` (the block a
    /// tail is taken from), as one segment at `level`. Its id is derived from the trace, the
    /// span and the ids it covers: the same span is the same segment.
    fn piece(
        &self,
        (ids, next): (&[u64], Option<u64>),
        from: u64,
        to: u64,
        level: Level,
    ) -> Arc<Segment> {
        let bs = self.trace.block_size;
        let hash = |b: u64| ids.get(b as usize).copied().or(next).unwrap_or_default();
        let mut key = self.trace.id.as_bytes().to_vec();
        key.extend_from_slice(&from.to_le_bytes());
        key.extend_from_slice(&to.to_le_bytes());
        for b in from / bs..to.div_ceil(bs) {
            key.extend_from_slice(&hash(b).to_le_bytes());
        }
        // One pass over the span (an exact-size iterator: the shared buffer is allocated once
        // and written in place); a block's content id is computed as the span enters it. The
        // position within the block is counted, not divided out of each token's position: a
        // division by the trace's block size per token was most of the time spent here.
        let (mut block, mut at) = (from / bs, from % bs);
        let mut id = self.block_id(hash(block));
        let tokens: Arc<[u32]> = (from..to)
            .map(|_| {
                if at == bs {
                    (block, at) = (block + 1, 0);
                    id = self.block_id(hash(block));
                }
                at += 1;
                synthetic_token(id, at - 1)
            })
            .collect();
        segment(
            xxh3_64_with_seed(&key, 0x7069_6563),
            level,
            from,
            to,
            tokens,
        )
    }
}

fn segment(id: u64, level: Level, from: u64, to: u64, tokens: Arc<[u32]>) -> Arc<Segment> {
    Arc::new(Segment {
        id,
        level,
        kind: match level {
            Level::Tools => SegmentKind::Tool,
            Level::System => SegmentKind::System,
            Level::Messages => SegmentKind::Message(Role::User),
        },
        label: format!("tokens {from}..{to}"),
        tokens,
        breakpoint: None,
    })
}

/// Distinct, deterministic token ids for count-only content `id`, over the whole 32-bit range so
/// that two different blocks' first tokens collide about once in 4 billion breaks (a collision
/// would let a token-level cache read one token past a block-level break).
fn synthetic(id: u64, n: u64) -> Arc<[u32]> {
    (0..n).map(|i| synthetic_token(id, i)).collect()
}

/// Token `i` of content `id` (see [`synthetic`]): the position spread over the id (an xxh3
/// value), through SplitMix64's finalizer, a bijection of 64-bit words (Steele, Lea and Flood,
/// "Fast splittable pseudorandom number generators", OOPSLA 2014), high half kept. Distinct
/// (id, position) pairs are distinct words but for a chance of 2^-64, so tokens of different
/// content collide only by the 32-bit cut. A few multiplications a token, where an xxh3 call
/// per token was most of a workload's build.
fn synthetic_token(id: u64, i: u64) -> u32 {
    let mut z = id ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 32) as u32
}

/// One stream's previous prompt: its segments with their token spans, its ids and its tail.
#[derive(Default)]
pub(super) struct Stream<'a> {
    /// Segments of the previous prompt with the tokens `start..end` each holds.
    segs: Vec<(Arc<Segment>, u64, u64)>,
    /// Hash ids of the previous prompt (the trace's own).
    ids: &'a [u64],
    /// The hash id of the next block the previous tail was taken from, and the tail's length.
    tail_of: Option<(u64, u64)>,
}

/// Where the levels of a stream's prompts begin: tool tokens, then system tokens.
#[derive(Debug, Clone, Copy)]
pub(super) struct Levels {
    /// Tool-definition tokens at the head of every prompt.
    pub tools: u64,
    /// System-prompt tokens after them.
    pub system: u64,
}

impl Levels {
    /// Level of the block holding token `p` (blocks are classified by where they start).
    fn at(&self, p: u64, bs: u64) -> Level {
        let start = p / bs * bs;
        if start < self.tools {
            Level::Tools
        } else if start < self.tools + self.system {
            Level::System
        } else {
            Level::Messages
        }
    }
}

impl<'a> Stream<'a> {
    /// The segments of a prompt of `input` tokens whose blocks are `ids`; `next` is the next
    /// request's ids (for the tail), `key` names the request (for a tail of its own).
    pub(super) fn prompt(
        &mut self,
        blocks: &Blocks<'_>,
        ids: &'a [u64],
        input: u64,
        next: Option<&[u64]>,
        levels: Levels,
        key: &str,
    ) -> Vec<Arc<Segment>> {
        let bs = blocks.trace.block_size;
        let n = self.ids.iter().zip(ids).take_while(|(a, b)| a == b).count();
        let carried = match self.tail_of {
            Some((h, t)) if n == self.ids.len() && ids.get(n) == Some(&h) => t,
            _ => 0,
        };
        let shared = n as u64 * bs + carried;
        let mut segs = Vec::new();
        for (seg, a, b) in std::mem::take(&mut self.segs) {
            if b <= shared {
                segs.push((seg, a, b));
            } else {
                if a < shared {
                    segs.push((blocks.piece((ids, None), a, shared, seg.level), a, shared));
                }
                break;
            }
        }
        let full = ids.len() as u64 * bs;
        let mut p = shared;
        while p < full {
            let lv = levels.at(p, bs);
            let mut end = (p / bs + 1) * bs;
            while end < full && levels.at(end, bs) == lv {
                end += bs;
            }
            segs.push((blocks.piece((ids, None), p, end, lv), p, end));
            p = end;
        }
        self.tail_of = None;
        let t = input.saturating_sub(full);
        if t > 0 {
            let cont = next.filter(|nx| nx.len() > ids.len() && nx[..ids.len()] == *ids);
            let seg = match cont {
                Some(nx) if t < bs => {
                    self.tail_of = Some((nx[ids.len()], t));
                    let with = (ids, Some(nx[ids.len()]));
                    blocks.piece(with, full, full + t, Level::Messages)
                }
                _ => {
                    let id = xxh3_64_with_seed(key.as_bytes(), 0x7461_696c);
                    let tokens = synthetic(id, t.min(u32::MAX as u64));
                    segment(id, Level::Messages, full, full + t, tokens)
                }
            };
            segs.push((seg, full, full + t));
        }
        let out = segs.iter().map(|(s, _, _)| s.clone()).collect();
        self.segs = segs;
        self.ids = ids;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceKind;

    fn trace(block_size: u64) -> Trace {
        Trace {
            id: "t".into(),
            file: "t.json".into(),
            kind: TraceKind::Mooncake,
            block_size,
            streams: Vec::new(),
        }
    }

    /// A piece is the slice `from..to` of its blocks' synthetic runs laid end to end, the block
    /// after `ids` (a tail's) included; its id depends on the span and the ids it covers.
    #[test]
    fn a_piece_is_its_blocks_tokens_end_to_end() {
        let t = trace(4);
        let blocks = Blocks::new(&t);
        let run = |h: u64| synthetic(blocks.block_id(h), 4);
        let ids = [10, 20, 30];
        let p = blocks.piece((&ids, Some(40)), 6, 15, Level::Messages);
        let (r20, r30, r40) = (run(20), run(30), run(40));
        let want: Vec<u32> = r20[2..]
            .iter()
            .chain(&r30[..])
            .chain(&r40[..3])
            .copied()
            .collect();
        assert_eq!(&p.tokens[..], &want[..]);
        assert_eq!(p.label, "tokens 6..15");
        // Equal hashes are equal tokens; another hash is other tokens.
        assert_eq!(
            run(20),
            blocks.piece((&ids, None), 4, 8, Level::Tools).tokens
        );
        assert_ne!(r20, r30);
        // A span that starts on a block's last token, and one that holds nothing.
        let edge = blocks.piece((&ids, None), 7, 9, Level::Messages);
        assert_eq!(&edge.tokens[..], &[r20[3], r30[0]]);
        assert!(blocks
            .piece((&ids, None), 5, 5, Level::Messages)
            .tokens
            .is_empty());
        // The same span of the same ids is the same segment; another tail block is not.
        let q = blocks.piece((&ids, Some(40)), 6, 15, Level::Messages);
        assert_eq!(p.id, q.id);
        assert_ne!(
            p.id,
            blocks.piece((&ids, Some(41)), 6, 15, Level::Messages).id
        );
    }
}
