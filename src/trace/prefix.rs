//! Prefix reuse on block-hash traces: the direct count, and one shared LRU block pool replayed
//! over many sessions on one clock ("N streams, one cache, one clock").
//!
//! The pool works on the trace's own hash blocks (64 tokens in kv-cache-tester): a request's hit
//! is the leading run of its `hash_ids` that are all in the pool, times the block size, capped at
//! its input. Requests are looked up at their send time and stored at their finish (send +
//! `api_time`), across every stream and session, in time order; a store at the same millisecond
//! as a lookup goes first (the response is complete when the next request is sent). Hits and
//! stores make a block the most recently used; a store into a full pool evicts the least
//! recently used block. Ids are local to a trace (`hash_id_scope: local`), so blocks are keyed
//! by (session, id) and sessions compete for capacity without sharing content.

use std::collections::{BTreeMap, HashMap};

use super::{Trace, TraceStream};

/// Tokens of `req` a perfect, unbounded cache serves: the leading hash ids it shares with the
/// previous request of its stream, times the block size, capped at its input.
pub fn consecutive_hits(stream: &TraceStream, block_size: u64) -> Vec<u64> {
    let mut prev: &[u64] = &[];
    stream
        .requests
        .iter()
        .map(|r| {
            let n = prev
                .iter()
                .zip(&r.hash_ids)
                .take_while(|(a, b)| a == b)
                .count() as u64;
            prev = &r.hash_ids;
            (n * block_size).min(r.input_tokens)
        })
        .collect()
}

/// One request's result in a pool replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOutcome {
    /// Index of the session (trace) in the input order.
    pub session: usize,
    /// Index of the stream within its session.
    pub stream: usize,
    /// Index of the request within its stream.
    pub request: usize,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Tokens served from the pool.
    pub cached_tokens: u64,
}

/// Totals of a pool replay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolReport {
    /// Every request, in lookup order.
    pub outcomes: Vec<PoolOutcome>,
    /// Blocks evicted to make room.
    pub evictions: u64,
    /// Distinct blocks ever stored (the memory bound of an unbounded pool).
    pub distinct_blocks: u64,
}

impl PoolReport {
    /// Cached tokens over prompt tokens, over every request.
    pub fn hit_rate(&self) -> f64 {
        let p: u64 = self.outcomes.iter().map(|o| o.prompt_tokens).sum();
        let c: u64 = self.outcomes.iter().map(|o| o.cached_tokens).sum();
        if p == 0 {
            0.0
        } else {
            c as f64 / p as f64
        }
    }
}

/// An LRU pool of hash blocks keyed by (session, hash id).
struct Pool {
    capacity: Option<u64>,
    clock: u64,
    /// Last use of each resident block.
    last_use: HashMap<(usize, u64), u64>,
    /// Resident blocks by last use (oldest first).
    by_age: BTreeMap<u64, (usize, u64)>,
    evictions: u64,
    seen: std::collections::HashSet<(usize, u64)>,
}

impl Pool {
    fn touch(&mut self, key: (usize, u64)) {
        self.clock += 1;
        if let Some(old) = self.last_use.insert(key, self.clock) {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.clock, key);
    }

    fn lookup(&mut self, session: usize, ids: &[u64]) -> u64 {
        let n = ids
            .iter()
            .take_while(|h| self.last_use.contains_key(&(session, **h)))
            .count();
        for h in &ids[..n] {
            self.touch((session, *h));
        }
        n as u64
    }

    fn store(&mut self, session: usize, ids: &[u64]) {
        for h in ids {
            let key = (session, *h);
            self.seen.insert(key);
            let resident = self.last_use.contains_key(&key);
            if !resident && self.capacity == Some(self.last_use.len() as u64) {
                if self.capacity == Some(0) {
                    continue;
                }
                if let Some((_, victim)) = self.by_age.pop_first() {
                    self.last_use.remove(&victim);
                    self.evictions += 1;
                }
            }
            self.touch(key);
        }
    }
}

/// Replays every stream of every trace against one shared pool of `capacity` blocks (`None`:
/// unbounded), in time order. Deterministic: ties are broken by (time, store first, session,
/// stream, request).
pub fn replay_pool(traces: &[Trace], capacity: Option<u64>) -> PoolReport {
    // (time, 0 = store / 1 = lookup / 2 = late store, session, stream, request)
    let mut events: Vec<(u64, u8, usize, usize, usize)> = Vec::new();
    for (si, t) in traces.iter().enumerate() {
        for (ti, s) in t.streams.iter().enumerate() {
            for (ri, r) in s.requests.iter().enumerate() {
                events.push((r.sent_at_ms, 1, si, ti, ri));
                // A request never reads its own blocks: with no recorded `api_time` (Mooncake)
                // its store follows every lookup of its millisecond.
                let store = if r.finished_at_ms() > r.sent_at_ms {
                    0
                } else {
                    2
                };
                events.push((r.finished_at_ms(), store, si, ti, ri));
            }
        }
    }
    events.sort_unstable();
    let mut pool = Pool {
        capacity,
        clock: 0,
        last_use: HashMap::new(),
        by_age: BTreeMap::new(),
        evictions: 0,
        seen: Default::default(),
    };
    let mut outcomes = Vec::new();
    for (_, kind, si, ti, ri) in events {
        let trace = &traces[si];
        let r = &trace.streams[ti].requests[ri];
        if kind != 1 {
            pool.store(si, &r.hash_ids);
        } else {
            let n = pool.lookup(si, &r.hash_ids);
            outcomes.push(PoolOutcome {
                session: si,
                stream: ti,
                request: ri,
                prompt_tokens: r.input_tokens,
                cached_tokens: (n * trace.block_size).min(r.input_tokens),
            });
        }
    }
    PoolReport {
        outcomes,
        evictions: pool.evictions,
        distinct_blocks: pool.seen.len() as u64,
    }
}
