//! Mooncake-style request traces, so a strategy's request sequence can be replayed on a real
//! engine (AIPerf, GuideLLM and vLLM's benchmark scripts read this format).
//!
//! One JSON object per line: `timestamp` (ms after the first request), `input_length`,
//! `output_length`, and `hash_ids`: one id per block of `block_size` prompt tokens (the last block
//! may be partial). A block's id is determined by its tokens *and every token before it* (a hash
//! chain), numbered densely in order of first appearance, so two requests share a prefix of ids
//! exactly as long as they share whole blocks of prompt: the ids form a prefix tree.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::cache::{CacheModel, CacheOutcome};
use crate::engine::{self, ReplayEnv};
use crate::prompt::{Request, Segment, TokenId};
use crate::scenario::Session;
use crate::strategy::Strategy;

/// One line of the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceLine {
    /// When the request arrives, in milliseconds from the session's start.
    pub timestamp: u64,
    /// Prompt tokens of the request.
    pub input_length: u64,
    /// Output tokens of the request.
    pub output_length: u64,
    /// The ids of the prompt's blocks, equal where two prompts share a prefix.
    pub hash_ids: Vec<u64>,
}

/// Numbers prompt blocks by their chained hash.
#[derive(Debug, Default)]
pub struct BlockHasher {
    block_size: usize,
    ids: HashMap<(u64, bool), u64>,
}

impl BlockHasher {
    /// A hasher of `block_size`-token blocks (at least 1).
    pub fn new(block_size: usize) -> Self {
        BlockHasher {
            block_size: block_size.max(1),
            ids: HashMap::new(),
        }
    }

    /// The dense id of a block whose chained hash is `chain`; a partial block (`full` false)
    /// never equals a full one, even with a colliding hash.
    fn id(&mut self, chain: u64, full: bool) -> u64 {
        let next = self.ids.len() as u64;
        *self.ids.entry((chain, full)).or_insert(next)
    }

    /// The ids of a prompt's blocks.
    pub fn hash_ids(&mut self, tokens: &[TokenId]) -> Vec<u64> {
        let mut parent = 0u64;
        let mut out = Vec::with_capacity(tokens.len().div_ceil(self.block_size));
        for block in tokens.chunks(self.block_size) {
            let bytes: Vec<u8> = block.iter().flat_map(|t| t.to_le_bytes()).collect();
            parent = xxh3_64_with_seed(&bytes, parent);
            out.push(self.id(parent, block.len() == self.block_size));
        }
        out
    }

    /// The hashes of a prompt given as segments, reusing `prev` (the same stream's previous
    /// prompt) for the whole blocks both share: a keep-alive ping re-sends its prompt, so it
    /// hashes nothing and copies no token. Ids equal [`BlockHasher::hash_ids`] of the flat tokens.
    fn hash_segments(&mut self, segments: &[Arc<Segment>], prev: &PromptHashes) -> PromptHashes {
        let size = self.block_size;
        let keep = (shared_tokens(segments, &prev.segments) / size).min(prev.chain.len());
        let mut chain = prev.chain[..keep].to_vec();
        let mut ids = prev.ids[..keep].to_vec();
        let mut parent = chain.last().copied().unwrap_or(0);
        let mut buf: Vec<u8> = Vec::with_capacity(size * 4);
        let mut skip = keep * size;
        for seg in segments {
            if skip >= seg.len() {
                skip -= seg.len();
                continue;
            }
            for t in &seg.tokens[skip..] {
                buf.extend_from_slice(&t.to_le_bytes());
                if buf.len() == size * 4 {
                    parent = xxh3_64_with_seed(&buf, parent);
                    chain.push(parent);
                    ids.push(self.id(parent, true));
                    buf.clear();
                }
            }
            skip = 0;
        }
        if !buf.is_empty() {
            let tail = xxh3_64_with_seed(&buf, parent);
            ids.push(self.id(tail, false));
        }
        PromptHashes {
            segments: segments.to_vec(),
            chain,
            ids,
        }
    }
}

/// Tokens at the start of `a` and `b` in segments they share (the same content).
fn shared_tokens(a: &[Arc<Segment>], b: &[Arc<Segment>]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| Arc::ptr_eq(x, y) || x.tokens == y.tokens)
        .map(|(x, _)| x.len())
        .sum()
}

/// A stream's previous prompt and its hashes, so the next prompt hashes only what it adds.
#[derive(Debug, Default)]
struct PromptHashes {
    /// The prompt's segments (shared with the replay, not copied).
    segments: Vec<Arc<Segment>>,
    /// The chained hash after each whole block.
    chain: Vec<u64>,
    /// The block ids: one per whole block, then the partial tail's when there is one.
    ids: Vec<u64>,
}

/// Wraps the cache model of a replay and hands each request to `emit` as a trace line as it is
/// sent, keeping only each stream's last prompt: memory follows the distinct content, not the
/// number of requests (keep-alive pings).
struct TraceRecorder<'a, F: FnMut(TraceLine) + Send> {
    /// The cache model that prices the replay.
    inner: &'a mut dyn CacheModel,
    /// Block ids, numbered across the whole trace.
    hasher: BlockHasher,
    /// Per stream, its previous prompt's hashes.
    streams: HashMap<String, PromptHashes>,
    /// When the first request was sent (timestamps are relative to it).
    start: Option<u64>,
    /// Receives each line in send order.
    emit: F,
}

impl<F: FnMut(TraceLine) + Send> CacheModel for TraceRecorder<'_, F> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let prev = self.streams.remove(&req.stream).unwrap_or_default();
        let hashes = self.hasher.hash_segments(&req.segments, &prev);
        drop(prev);
        let start = *self.start.get_or_insert(req.sent_at_ms);
        (self.emit)(TraceLine {
            timestamp: req.sent_at_ms.saturating_sub(start),
            input_length: req.segments.iter().map(|s| s.len() as u64).sum(),
            output_length: req.output_tokens,
            hash_ids: hashes.ids.clone(),
        });
        self.streams.insert(req.stream.clone(), hashes);
        self.inner.lookup(req)
    }
    fn store(&mut self, req: &Request, o: &CacheOutcome, visible: u64, completed: u64) {
        self.inner.store(req, o, visible, completed)
    }
}

/// Replays `session` under `strategy` and hands each request's trace line to `emit`.
fn record_trace(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
    block_size: usize,
    emit: impl FnMut(TraceLine) + Send,
) -> Result<(), engine::ReplayError> {
    let mut rec = TraceRecorder {
        inner: cache,
        hasher: BlockHasher::new(block_size),
        streams: HashMap::new(),
        start: None,
        emit,
    };
    engine::replay(session, strategy, &mut rec, env)?;
    Ok(())
}

/// Wraps the cache model of a replay and records every request it sees.
struct Recorder<'a> {
    inner: &'a mut dyn CacheModel,
    seen: Vec<RecordedPrompt>,
}

impl CacheModel for Recorder<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let tokens: Vec<TokenId> = req
            .segments
            .iter()
            .flat_map(|s| s.tokens.iter().copied())
            .collect();
        self.seen.push((req.sent_at_ms, tokens, req.output_tokens));
        self.inner.lookup(req)
    }
    fn store(&mut self, req: &Request, o: &CacheOutcome, visible: u64, completed: u64) {
        self.inner.store(req, o, visible, completed)
    }
}

/// One replayed request: when it was sent (simulated ms), its prompt tokens, its output length.
pub type RecordedPrompt = (u64, Vec<TokenId>, u64);

/// Replays `session` under `strategy` and returns every request's prompt tokens.
pub fn prompts(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
) -> Result<Vec<RecordedPrompt>, engine::ReplayError> {
    let mut rec = Recorder {
        inner: cache,
        seen: Vec::new(),
    };
    engine::replay(session, strategy, &mut rec, env)?;
    Ok(rec.seen)
}

/// Replays `session` under `strategy` and returns its requests as trace lines.
pub fn trace(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
    block_size: usize,
) -> Result<Vec<TraceLine>, engine::ReplayError> {
    let mut lines = Vec::new();
    record_trace(session, strategy, cache, env, block_size, |l| lines.push(l))?;
    Ok(lines)
}

/// The trace as JSONL (the bytes of [`to_jsonl`] over [`trace`]), written line by line as the
/// replay sends each request, and the number of lines.
pub fn trace_jsonl(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
    block_size: usize,
) -> Result<(Vec<u8>, usize), TraceError> {
    let mut out = Vec::new();
    let mut count = 0usize;
    let mut failed = None;
    record_trace(session, strategy, cache, env, block_size, |l| {
        count += 1;
        if failed.is_none() {
            match serde_json::to_writer(&mut out, &l) {
                Ok(()) => out.push(b'\n'),
                Err(e) => failed = Some(e.to_string()),
            }
        }
    })
    .map_err(TraceError::Replay)?;
    match failed {
        Some(e) => Err(TraceError::Json(e)),
        None => Ok((out, count)),
    }
}

/// Why a trace could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The replay stopped (bad input).
    #[error("{0}")]
    Replay(engine::ReplayError),
    /// A line could not be serialized.
    #[error("cannot write JSON: {0}")]
    Json(String),
}

/// The trace as JSONL.
pub fn to_jsonl(lines: &[TraceLine]) -> Result<Vec<u8>, TraceError> {
    let mut out = Vec::new();
    for l in lines {
        serde_json::to_writer(&mut out, l).map_err(|e| TraceError::Json(e.to_string()))?;
        out.push(b'\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_shared_exactly_over_shared_whole_blocks() {
        let mut h = BlockHasher::new(4);
        let a: Vec<u32> = (0..10).collect(); // blocks [0..4) [4..8) [8..10)
        let mut b = a.clone();
        b[5] = 99; // differs in the second block
        let ia = h.hash_ids(&a);
        let ib = h.hash_ids(&b);
        assert_eq!(ia, vec![0, 1, 2]);
        assert_eq!(ib, vec![0, 3, 4], "only the first block is shared");
        // The same second block after a different first block is a different node of the tree.
        let mut c = a.clone();
        c[0] = 7;
        assert_eq!(h.hash_ids(&c), vec![5, 6, 7]);
        // An extension of `a` shares its two full blocks; `a`'s partial tail is not a prefix.
        let d: Vec<u32> = (0..12).collect();
        assert_eq!(h.hash_ids(&d), vec![0, 1, 8]);
    }
}
