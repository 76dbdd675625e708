//! vLLM-style automatic prefix caching over fixed-size KV blocks (CACHE_SEMANTICS.md §4.1,
//! vllm-project/vllm `vllm/v1/core/{kv_cache_utils,kv_cache_manager,block_pool}.py`).
//!
//! - Only full blocks of `block_size` (16) tokens are cached, keyed by a chained block hash (V3).
//! - Lookup scans blocks from the start and stops at the first miss (V4); the last prompt token
//!   is always recomputed, so hit = block_size × min(matched, ⌊(N−1)/block_size⌋) (V5).
//! - The pool holds `capacity_blocks`; blocks of running requests are pinned (ref count), the
//!   others sit in an LRU free list and keep their hash until reused. A finishing request frees
//!   its blocks tail first, so tails are evicted first; eviction is lazy, on allocation (V6).
//! - No TTL. Decode blocks are cached as they fill: the visible reply becomes part of the
//!   cached sequence once complete (§8); reasoning tokens are not repeated by the next prompt.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::common::{self, BlockHasher, HashKeyed, HashSetKeyed, SeenPrefixes, StreamHistory};
use super::{BreakReason, CacheModel, CacheOutcome};
use crate::prompt::{Request, Segment};

/// Parameters of the paged cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PagedConfig {
    /// Tokens per KV block (vLLM `--block-size`, default 16).
    pub block_size: usize,
    /// Blocks in the pool. Default 32,768 blocks = 524,288 tokens: Llama 3.1 8B in bf16 needs
    /// 128 KiB of KV per token (32 layers × 8 KV heads × 128 dims × 2 × 2 bytes), so ~64 GiB
    /// of KV space on an 80 GB GPU holds 524,288 tokens.
    pub capacity_blocks: usize,
}

impl Default for PagedConfig {
    fn default() -> Self {
        PagedConfig {
            block_size: 16,
            capacity_blocks: 32_768,
        }
    }
}

#[derive(Debug, Clone)]
struct Block {
    /// (model key, chained block hash) while the block holds cached content.
    hash: Option<(u64, u64)>,
    ref_cnt: u32,
    visible_at: u64,
    /// Neighbours in the free list (least recently freed at the head), when free.
    prev: usize,
    next: usize,
    free: bool,
}

const NIL: usize = usize::MAX;

#[derive(Debug)]
struct ModelState {
    hasher: BlockHasher,
    seen: SeenPrefixes,
}

/// The vLLM-style paged prefix cache. The block pool is shared by all models (one GPU's KV
/// space); hashes are per model.
#[derive(Debug)]
pub struct PagedCache {
    config: PagedConfig,
    blocks: Vec<Block>,
    by_hash: HashKeyed<(u64, u64), usize>,
    /// Doubly linked LRU free list (vLLM's `FreeKVCacheBlockQueue`): O(1) append, pop and
    /// removal from the middle when a cached block is hit again.
    free_head: usize,
    free_tail: usize,
    /// Requests still generating: (completes at, their blocks in order).
    running: Vec<(u64, Vec<usize>)>,
    evicted: HashSetKeyed<(u64, u64)>,
    models: HashMap<String, ModelState>,
    streams: StreamHistory,
}

fn model_key(model: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(model.as_bytes())
}

impl PagedCache {
    pub fn new(config: PagedConfig) -> Self {
        PagedCache {
            config,
            blocks: Vec::new(),
            by_hash: HashKeyed::default(),
            free_head: NIL,
            free_tail: NIL,
            running: Vec::new(),
            evicted: HashSetKeyed::default(),
            models: HashMap::new(),
            streams: StreamHistory::default(),
        }
    }

    /// Frees the blocks of requests finished by `now`, each request tail first (V6).
    fn release_finished(&mut self, now: u64) {
        let mut done: Vec<(u64, Vec<usize>)> = Vec::new();
        self.running.retain(|(t, ids)| {
            if *t <= now {
                done.push((*t, ids.clone()));
                false
            } else {
                true
            }
        });
        done.sort_by_key(|(t, _)| *t);
        for (_, ids) in done {
            for &id in ids.iter().rev() {
                let b = &mut self.blocks[id];
                b.ref_cnt = b.ref_cnt.saturating_sub(1);
                if b.ref_cnt == 0 {
                    self.push_free(id);
                }
            }
        }
    }

    fn push_free(&mut self, id: usize) {
        let tail = self.free_tail;
        let b = &mut self.blocks[id];
        b.free = true;
        b.prev = tail;
        b.next = NIL;
        if tail == NIL {
            self.free_head = id;
        } else {
            self.blocks[tail].next = id;
        }
        self.free_tail = id;
    }

    fn unlink_free(&mut self, id: usize) {
        let (prev, next) = (self.blocks[id].prev, self.blocks[id].next);
        if prev == NIL {
            self.free_head = next;
        } else {
            self.blocks[prev].next = next;
        }
        if next == NIL {
            self.free_tail = prev;
        } else {
            self.blocks[next].prev = prev;
        }
        let b = &mut self.blocks[id];
        b.free = false;
        b.prev = NIL;
        b.next = NIL;
    }

    /// A block for new content: a never-used one while the pool has room, else the least
    /// recently freed one (evicting its hash).
    fn allocate(&mut self) -> Option<usize> {
        if self.blocks.len() < self.config.capacity_blocks {
            self.blocks.push(Block {
                hash: None,
                ref_cnt: 0,
                visible_at: 0,
                prev: NIL,
                next: NIL,
                free: false,
            });
            return Some(self.blocks.len() - 1);
        }
        let id = self.free_head;
        if id == NIL {
            return None;
        }
        self.unlink_free(id);
        let b = &mut self.blocks[id];
        if let Some(k) = b.hash.take() {
            self.by_hash.remove(&k);
            self.evicted.insert(k);
        }
        Some(id)
    }
}

impl CacheModel for PagedCache {
    fn name(&self) -> &str {
        "paged"
    }

    fn charges_writes(&self) -> bool {
        false
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let now = req.sent_at_ms;
        self.release_finished(now);
        let prompt = req.prompt_tokens();
        let bs = self.config.block_size.max(1) as u64;
        let mk = model_key(&req.model);
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let others = self.models.keys().any(|m| m != &req.model);
        let fresh = !self.models.contains_key(&req.model);
        let state = self
            .models
            .entry(req.model.clone())
            .or_insert_with(|| ModelState {
                hasher: BlockHasher::new(bs as usize),
                seen: SeenPrefixes::default(),
            });
        let hashes = state.hasher.hashes(&req.segments);
        let mut matched = 0usize;
        while matched < hashes.len()
            && self
                .by_hash
                .get(&(mk, hashes[matched]))
                .is_some_and(|&id| self.blocks[id].visible_at <= now)
        {
            matched += 1;
        }
        let mut raw = matched;
        while raw < hashes.len()
            && (self.by_hash.contains_key(&(mk, hashes[raw]))
                || self.evicted.contains(&(mk, hashes[raw])))
        {
            raw += 1;
        }
        let in_flight = raw > matched && self.by_hash.contains_key(&(mk, hashes[matched]));
        let cap = prompt.saturating_sub(1) / bs;
        let cached = bs * (matched as u64).min(cap);
        outcome.cached_tokens = cached;
        outcome.write_5m_tokens = (prompt / bs * bs).saturating_sub(cached);
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let seg_hashes = common::segment_hashes(req.segments.iter());
        let ends = common::segment_ends(&req.segments);
        let seen = state.seen.matches(&seg_hashes, &ends, now);
        let departure = self.streams.departure(req, &seg_hashes);
        self.streams.record(req, seg_hashes);
        outcome.stop = if fresh {
            common::stop_at(req, 0, common::cold_reason(others))
        } else {
            common::automatic_stop(
                req,
                cached,
                matched as u64 * bs,
                raw as u64 * bs,
                in_flight,
                false,
                seen,
                bs,
                BreakReason::Evicted,
                common::departure_stop(req, departure, &ends),
            )
        };
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, visible_at: u64, completed: u64) {
        let bs = self.config.block_size.max(1);
        let mk = model_key(&req.model);
        let all: Vec<Arc<Segment>> = req.segments.iter().chain(&req.reply).cloned().collect();
        let Some(state) = self.models.get_mut(&req.model) else {
            return;
        };
        let hashes = state.hasher.hashes(&all);
        let seg_hashes = common::segment_hashes(all.iter());
        let n = req.segments.len();
        state.seen.record_seen(&seg_hashes[..n]);
        let prompt_blocks = req.prompt_tokens() as usize / bs;
        let mut held = Vec::with_capacity(hashes.len());
        let mut stored_upto = 0usize;
        for (i, h) in hashes.iter().enumerate() {
            let vis = if i < prompt_blocks {
                visible_at
            } else {
                completed
            };
            if let Some(&id) = self.by_hash.get(&(mk, *h)) {
                let b = &mut self.blocks[id];
                let was_free = b.free;
                if was_free {
                    self.unlink_free(id);
                }
                let b = &mut self.blocks[id];
                b.ref_cnt += 1;
                b.visible_at = b.visible_at.min(vis);
                held.push(id);
            } else {
                let Some(id) = self.allocate() else {
                    break; // the pool is full of pinned blocks: the rest is not cached
                };
                let b = &mut self.blocks[id];
                b.hash = Some((mk, *h));
                b.ref_cnt = 1;
                b.visible_at = vis;
                self.by_hash.insert((mk, *h), id);
                self.evicted.remove(&(mk, *h));
                held.push(id);
            }
            stored_upto = (i + 1) * bs;
        }
        self.running.push((completed, held));
        // Record, for explanations, the segment prefixes that fit in the stored blocks.
        let state = self.models.get_mut(&req.model).expect("state exists");
        let ends = common::segment_ends(&all);
        let k = ends
            .iter()
            .take_while(|&&e| e as usize <= stored_upto)
            .count();
        let kp = k.min(n);
        state.seen.record_continued(&seg_hashes);
        state.seen.record_stored(&seg_hashes[..kp], visible_at);
        if k > n {
            state.seen.record_stored(&seg_hashes[n..k], completed);
        }
    }
}
