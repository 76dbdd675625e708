//! Mooncake-style request traces, so a strategy's request sequence can be replayed on a real
//! engine (AIPerf, GuideLLM and vLLM's benchmark scripts read this format).
//!
//! One JSON object per line: `timestamp` (ms after the first request), `input_length`,
//! `output_length`, and `hash_ids`: one id per block of `block_size` prompt tokens (the last block
//! may be partial). A block's id is determined by its tokens *and every token before it* (a hash
//! chain), numbered densely in order of first appearance, so two requests share a prefix of ids
//! exactly as long as they share whole blocks of prompt: the ids form a prefix tree.

use std::collections::HashMap;

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::cache::{CacheModel, CacheOutcome};
use crate::engine::{self, ReplayEnv};
use crate::prompt::{Request, TokenId};
use crate::scenario::Session;
use crate::strategy::Strategy;

/// One line of the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceLine {
    pub timestamp: u64,
    pub input_length: u64,
    pub output_length: u64,
    pub hash_ids: Vec<u64>,
}

/// Numbers prompt blocks by their chained hash.
#[derive(Debug, Default)]
pub struct BlockHasher {
    block_size: usize,
    ids: HashMap<(u64, bool), u64>,
}

impl BlockHasher {
    pub fn new(block_size: usize) -> Self {
        BlockHasher {
            block_size: block_size.max(1),
            ids: HashMap::new(),
        }
    }

    /// The ids of a prompt's blocks.
    pub fn hash_ids(&mut self, tokens: &[TokenId]) -> Vec<u64> {
        let mut parent = 0u64;
        let mut out = Vec::with_capacity(tokens.len().div_ceil(self.block_size));
        for block in tokens.chunks(self.block_size) {
            let bytes: Vec<u8> = block.iter().flat_map(|t| t.to_le_bytes()).collect();
            parent = xxh3_64_with_seed(&bytes, parent);
            // A partial block never equals a full one, even with a colliding hash.
            let key = (parent, block.len() == self.block_size);
            let next = self.ids.len() as u64;
            out.push(*self.ids.entry(key).or_insert(next));
        }
        out
    }
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
    let seen = prompts(session, strategy, cache, env)?;
    let mut hasher = BlockHasher::new(block_size);
    let start = seen.first().map_or(0, |s| s.0);
    Ok(seen
        .iter()
        .map(|(at, tokens, out)| TraceLine {
            timestamp: at.saturating_sub(start),
            input_length: tokens.len() as u64,
            output_length: *out,
            hash_ids: hasher.hash_ids(tokens),
        })
        .collect())
}

/// The trace as JSONL.
pub fn to_jsonl(lines: &[TraceLine]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for l in lines {
        serde_json::to_writer(&mut out, l).map_err(|e| format!("cannot write JSON: {e}"))?;
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
