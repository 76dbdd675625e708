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

use std::collections::HashMap;
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::prompt::{Level, Role, Segment, SegmentKind};
use crate::trace::Trace;

/// The synthetic tokens of each distinct hash id of one trace (ids are local to a trace).
pub(super) struct Blocks<'a> {
    /// The trace the ids belong to.
    trace: &'a Trace,
    /// Tokens of each hash id seen so far.
    tokens: HashMap<u64, Arc<[u32]>>,
}

impl<'a> Blocks<'a> {
    pub(super) fn new(trace: &'a Trace) -> Self {
        Blocks {
            trace,
            tokens: HashMap::new(),
        }
    }

    fn block(&mut self, hash: u64) -> Arc<[u32]> {
        let (trace, bs) = (self.trace, self.trace.block_size);
        self.tokens
            .entry(hash)
            .or_insert_with(|| {
                let id = xxh3_64_with_seed(trace.id.as_bytes(), hash);
                synthetic(id, bs.min(u32::MAX as u64) as u32).into()
            })
            .clone()
    }

    /// Tokens `from..to` of the prompt whose blocks are `ids`, as one segment at `level`. Its
    /// id is derived from the trace, the span and the ids it covers: the same span is the same
    /// segment.
    fn piece(&mut self, ids: &[u64], from: u64, to: u64, level: Level) -> Arc<Segment> {
        let bs = self.trace.block_size;
        let blocks = &ids[(from / bs) as usize..to.div_ceil(bs) as usize];
        let mut key = self.trace.id.as_bytes().to_vec();
        key.extend_from_slice(&from.to_le_bytes());
        key.extend_from_slice(&to.to_le_bytes());
        for h in blocks {
            key.extend_from_slice(&h.to_le_bytes());
        }
        let mut tokens = Vec::with_capacity((to - from) as usize);
        let mut p = from;
        while p < to {
            let b = self.block(ids[(p / bs) as usize]);
            let (a, e) = ((p % bs) as usize, (bs.min(to - p + p % bs)) as usize);
            tokens.extend_from_slice(&b[a..e]);
            p += (e - a) as u64;
        }
        segment(
            xxh3_64_with_seed(&key, 0x7069_6563),
            level,
            from,
            to,
            tokens,
        )
    }
}

fn segment(id: u64, level: Level, from: u64, to: u64, tokens: Vec<u32>) -> Arc<Segment> {
    Arc::new(Segment {
        id,
        level,
        kind: match level {
            Level::Tools => SegmentKind::Tool,
            Level::System => SegmentKind::System,
            Level::Messages => SegmentKind::Message(Role::User),
        },
        label: format!("tokens {from}..{to}"),
        tokens: tokens.into(),
        breakpoint: None,
    })
}

/// Distinct, deterministic token ids for count-only content `id`, over the whole 32-bit range so
/// that two different blocks' first tokens collide about once in 4 billion breaks (a collision
/// would let a token-level cache read one token past a block-level break).
fn synthetic(id: u64, n: u32) -> Vec<u32> {
    (0..n as u64)
        .map(|i| xxh3_64_with_seed(&i.to_le_bytes(), id) as u32)
        .collect()
}

/// One stream's previous prompt: its segments with their token spans, its ids and its tail.
#[derive(Default)]
pub(super) struct Stream {
    /// Segments of the previous prompt with the tokens `start..end` each holds.
    segs: Vec<(Arc<Segment>, u64, u64)>,
    /// Hash ids of the previous prompt.
    ids: Vec<u64>,
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

impl Stream {
    /// The segments of a prompt of `input` tokens whose blocks are `ids`; `next` is the next
    /// request's ids (for the tail), `key` names the request (for a tail of its own).
    pub(super) fn prompt(
        &mut self,
        blocks: &mut Blocks<'_>,
        ids: &[u64],
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
                    segs.push((blocks.piece(ids, a, shared, seg.level), a, shared));
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
            segs.push((blocks.piece(ids, p, end, lv), p, end));
            p = end;
        }
        self.tail_of = None;
        let t = input.saturating_sub(full);
        if t > 0 {
            let cont = next.filter(|nx| nx.len() > ids.len() && nx[..ids.len()] == *ids);
            let seg = match cont {
                Some(nx) if t < bs => {
                    let mut with = ids.to_vec();
                    with.push(nx[ids.len()]);
                    self.tail_of = Some((nx[ids.len()], t));
                    blocks.piece(&with, full, full + t, Level::Messages)
                }
                _ => {
                    let id = xxh3_64_with_seed(key.as_bytes(), 0x7461_696c);
                    let tokens = synthetic(id, t.min(u32::MAX as u64) as u32);
                    segment(id, Level::Messages, full, full + t, tokens)
                }
            };
            segs.push((seg, full, full + t));
        }
        let out = segs.iter().map(|(s, _, _)| s.clone()).collect();
        self.segs = segs;
        self.ids = ids.to_vec();
        out
    }
}
