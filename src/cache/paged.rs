//! vLLM-style automatic prefix caching over fixed-size KV blocks (docs/cache-models.md, *paged*;
//! vllm-project/vllm `vllm/v1/core/{kv_cache_utils,kv_cache_manager,block_pool}.py`).
//!
//! - Only full blocks of `block_size` (16) tokens are cached, keyed by a chained block hash (V3).
//! - Lookup scans blocks from the start and stops at the first miss (V4); the last prompt token
//!   is always recomputed, so hit = block_size × min(matched, ⌊(N−1)/block_size⌋) (V5).
//! - The pool holds `capacity_blocks`; blocks of running requests are pinned (ref count), the
//!   others sit in an LRU free list and keep their hash until reused. A finishing request frees
//!   its blocks tail first, so tails are evicted first; eviction is lazy, on allocation (V6).
//! - No TTL. Decode blocks are cached as they fill: the generated tokens (reasoning, then the
//!   visible reply) join the cached sequence once complete (§8). The next prompt repeats the
//!   reply but not the reasoning, so after a reply with reasoning the match ends at the previous
//!   prompt.
//! - The KV of the last sampled token is never computed (the scheduler stops before feeding it
//!   back: `num_computed_tokens` covers all but that token), so a request caches the whole blocks
//!   of `prompt + generated − 1`.
//! - Prompt blocks are hashed and cached when the request's slots are allocated, at scheduling,
//!   so a request scheduled after another (even while its prefill runs) finds them; the API
//!   rule that an entry is readable only once the response has begun does not apply here.
//!   Generated blocks count from the reply's completion.
//! - Pool accounting as vLLM allocates: a request holds `ceil(computed / block_size)` blocks.
//!   Blocks found by the lookup are shared; every other block is a new allocation, even when an
//!   equal block is cached (no de-duplication: the newer copy is found only once the older is
//!   evicted), and the partial last block takes a pool slot of its own (evicting one more LRU
//!   block when the pool is full). A freed partial block holds nothing and is the first of its
//!   request's blocks to be reused.
//!
//! Cost per request is what it adds, not its length. The LRU free list is kept implicitly:
//! a request pins only its last block (which pins the chain above it), and a release stamps only
//! that block. The free list's order follows from the stamps: a release numbers its blocks tail
//! first, so within a chain a parent is always freed after its children; hence the least
//! recently freed block is always a leaf of the block tree, and a leaf's own stamp (raised by
//! its evicted children's stamps + 1) is exactly its position in vLLM's free list. Evictable
//! leaves sit in an ordered set; everything else is untouched until it becomes a leaf. A
//! request's partial last block is the child of its last full block, so it is freed (and
//! reused) first. A shared block whose parent is not the request's previous block (only copies
//! bring that about) is pinned apart and given its place in the tail-first order on release.
//! Each stream remembers the blocks it held, so a lookup probes only blocks past them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::{BuildHasher, BuildHasherDefault};

use hashbrown::hash_table::{Entry, HashTable};

use serde::{Deserialize, Serialize};

use super::common::{self, HashKeyed, HashSetKeyed, PreHashed, SeenPrefixes};
use super::cursor::{automatic_stop, AutoStream, ByName, Streams};
use super::{BreakReason, CacheModel, CacheOutcome};
use crate::prompt::Request;

mod unbounded;
use unbounded::{Stored, Visible};

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

impl super::Section for PagedConfig {
    fn check(&self) -> Result<(), super::CacheError> {
        if self.block_size == 0 {
            return Err(super::CacheError::Zero { key: "block_size" });
        }
        Ok(())
    }
}

/// Aligned to a cache line, so reading a block touches one line, not two.
#[derive(Debug, Clone)]
#[repr(align(64))]
struct Block {
    /// (model key, chained block hash) of the cached content, when `hashed`.
    key: (u64, u64),
    /// The block holds cached content under `key`; false for a request's partial last block.
    hashed: bool,
    /// The block holds content, so it is in the evictable set once free (a fresh block is not).
    used: bool,
    /// A younger copy of a block cached under the same hash: not the one `by_hash` names.
    copy: bool,
    /// The next block cached under the same hash, in allocation order (the ring of copies
    /// closes back on the block `by_hash` names; a block alone is its own next).
    next_copy: u32,
    /// The previous block cached under the same hash in that ring.
    prev_copy: u32,
    /// The block before this one in its chain (`u32::MAX` for a first block; see
    /// [`Block::parent`]): a 32-bit id keeps the block at 64 bytes, where a `usize` made it 72.
    parent: u32,
    /// Cached blocks whose parent this is.
    children: u32,
    /// Running requests whose held blocks end here (each pins the whole chain above).
    pins: u32,
    /// Free-list position from the last release ending here or below: greater = freed later.
    stamp: u64,
    /// When the block's content becomes readable (ms): when its request's response began.
    visible_at: u64,
    /// In the evictable set (cached, unpinned, no cached children).
    evictable: bool,
    /// Allocation number of the current content: a block evicted and refilled with the same
    /// hash is another block for a stream that remembers it.
    generation: u64,
}

const NIL: usize = usize::MAX;

/// Most blocks a pool holds: ids fit in 32 bits (a pool that large needs 256 GiB for its
/// blocks alone).
const MAX_BLOCKS: usize = u32::MAX as usize;

impl Block {
    /// A block that has held nothing yet.
    fn fresh() -> Block {
        Block {
            key: (0, 0),
            hashed: false,
            used: false,
            copy: false,
            next_copy: u32::MAX,
            prev_copy: u32::MAX,
            parent: u32::MAX,
            children: 0,
            pins: 0,
            stamp: 0,
            visible_at: 0,
            evictable: false,
            generation: 0,
        }
    }

    /// The block before this one in its chain (`NIL` for a first block).
    fn parent(&self) -> usize {
        if self.parent == u32::MAX {
            NIL
        } else {
            self.parent as usize
        }
    }
}

/// `id` as a block's parent field.
fn parent_id(id: usize) -> u32 {
    if id == NIL {
        u32::MAX
    } else {
        id as u32
    }
}

/// Evicted blocks' slots of the index removed together (see `PagedCache::stale`). The
/// removals are independent probes of a table that outgrows the core's cache, so a longer batch
/// overlaps more of their misses: on the 710 kv-cache-tester traces at 64k blocks the run took
/// 0.3-1.1 s less (of 8.4-8.8 s) with 128 to 2,048 than with 32, about the same from 128 on
/// (docs/performance.md, "paged: evicted hashes removed 256 at a time"). At most this many
/// stale slots sit in the index at once.
const STALE_BATCH: usize = 256;

/// Free-list positions from here up are handed out to blocks appended at the back; those below
/// to blocks put in front, counting down.
const BACK: u64 = 1 << 62;

impl Default for StreamState {
    fn default() -> Self {
        StreamState {
            auto: AutoStream::default(),
            chain: Vec::new(),
            chain_model: 0,
            chain_vis: 0,
            first_copy: usize::MAX,
            held: 0,
        }
    }
}

/// A request still generating: (completes at, its number among stores, last held block or
/// `NIL`, blocks held, held blocks pinned apart from the last one with their chain position: a
/// shared block whose parent is not the request's previous block, which only copies bring
/// about). Ordered by completion, then store order.
type Running = Reverse<(u64, u64, usize, u64, Vec<(usize, u64)>)>;

#[derive(Debug)]
struct ModelState {
    /// The model's key in the pool's hashes ([`model_key`] of its name, hashed once).
    key: u64,
    /// Prefix hashes of every earlier prompt, to tell "evicted" from "never written".
    seen: SeenPrefixes,
}

/// A stream's cursor plus the blocks its last stored request held, in chain order.
#[derive(Debug)]
struct StreamState {
    /// The stream's cursor, seen-prefix memo and block hashes of its previous prompt.
    auto: AutoStream,
    /// (block, generation) in chain order.
    chain: Vec<(usize, u64)>,
    /// Model key the blocks of `chain` were stored under.
    chain_model: u64,
    /// Upper bound of the `visible_at` of the blocks in `chain`.
    chain_vis: u64,
    /// Position of the first block of `chain` that is a copy or whose parent is not the block
    /// before it (`usize::MAX`: none): from there on `by_hash` decides which block a lookup
    /// finds, and pinning the chain's end no longer holds the blocks before it.
    first_copy: usize,
    /// A pool kept as hashes ([`PagedCache::hashes_only`]): the leading blocks of the stream's
    /// cursor that its last store cached (`chain` stays empty there).
    held: usize,
}

/// The vLLM-style paged prefix cache. The block pool is shared by all models (one GPU's KV
/// space); hashes are per model.
#[derive(Debug)]
pub struct PagedCache {
    /// The rules this cache applies (block size and pool size).
    config: PagedConfig,
    /// The block pool, indexed by block id.
    blocks: Vec<Block>,
    /// The block a lookup finds for each (model key, chained block hash): the oldest block
    /// cached under it. Younger copies (allocated while an equal block was cached) follow it in
    /// the ring of `next_copy`, oldest first: vLLM keeps them all under the hash and finds the
    /// oldest; the next takes over the hash when the block it is found through is evicted.
    /// A slot holds the block id and 32 bits of its key's hash (see [`slot`]), 8 bytes: the key
    /// itself is read from the block, only when those bits match; an evicted block's slot is
    /// found by its id; growing the table reads no block.
    by_hash: HashTable<u64>,
    /// Evictable leaves by (stamp, block), least first: the least is the head of vLLM's free
    /// list. Removal is lazy: an entry counts only while its block is evictable with that stamp
    /// (a block's stamp changes only while it is out of the set), so taking a block out is a
    /// flag, and stale entries are dropped as they reach the top or when they outnumber the
    /// live ones.
    evictable: BinaryHeap<Reverse<(u64, u32)>>,
    /// Blocks in the evictable set (entries of `evictable` that count).
    listed: usize,
    /// Next free-list position to hand out at the back (counting up from [`BACK`]).
    next_seq: u64,
    /// Next free-list position to hand out in front (counting down from `BACK - 1`).
    next_front: u64,
    /// Allocations so far (block generations).
    allocations: u64,
    /// Requests still generating, the first to complete on top (see [`Running`]).
    running: BinaryHeap<Running>,
    /// Requests stored so far (orders those completing at the same time).
    runs: u64,
    /// Every hash a store has cached, evicted since or not: with `by_hash` asked first, this
    /// tells content evicted from content never cached. A store adds only the hashes past the
    /// blocks its stream's previous store cached (those are here already), so a stream that
    /// recomputes a prompt whose blocks were evicted adds nothing: one insert per new block,
    /// not one per eviction (which cost a probe of a table of millions each); of those, only
    /// the ones not there yet, found by bisection ([`insert_chain`]). Empty until the
    /// first eviction: until then every hash stored is still in `by_hash` (so a pool that never
    /// evicts, such as a workload's unbounded twin, keeps no second table of every hash).
    /// One set of block hashes per (model key, hash of the chain's first block): a chained
    /// hash fixes every block before it, so only a chain with the same first block can have
    /// cached it. Sessions that share no content then fill small sets of their own instead of
    /// one table of every hash, whose inserts were a cache and TLB miss each.
    stored: HashKeyed<(u64, u64), HashSetKeyed<u64>>,
    /// A block holding cached content has been evicted, so `stored` is kept (see there).
    evicted_any: bool,
    /// Slots of `by_hash` whose block was evicted, removed [`STALE_BATCH`] at a time. Until
    /// then a lookup passes over them: a slot counts only while its block is hashed, the
    /// oldest under that key, and holds it (a block refilled with the same key as the oldest
    /// may have two equal slots; either finds it).
    stale: Vec<u64>,
    /// Each model's seen prefixes, keyed by model name.
    models: ByName<ModelState>,
    /// Every stream's memory of its previous request, keyed by stream name.
    streams: Streams<StreamState>,
    /// Token ids for generated reasoning, which no later prompt repeats.
    reasoning: common::ReasoningIds,
    /// A pool too large to ever evict (`capacity_blocks` ≥ [`MAX_BLOCKS`], a workload's
    /// unbounded twin) keeps only each cached hash's earliest readable time here, and no
    /// blocks: the outcomes are the same (see [`unbounded`]).
    hashes_only: Option<Visible>,
}

fn model_key(model: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(model.as_bytes())
}

impl PagedCache {
    /// An empty pool with these parameters.
    pub fn new(config: PagedConfig) -> Self {
        // Such a pool would fill only after 2^32 allocations, 256 GiB of blocks.
        let unbounded = config.capacity_blocks >= MAX_BLOCKS;
        Self::with_blocks(config, !unbounded)
    }

    /// An empty pool that keeps its blocks (`blocks`), or only hashes (an unbounded pool).
    fn with_blocks(config: PagedConfig, blocks: bool) -> Self {
        // Room for up to 64k blocks is reserved (4 MiB of address space): a page is faulted in
        // only once a block on it is written, and growing never copies the blocks written so far
        // (from 1k blocks it copied 1 MiB on the way to 16k). A pool kept as hashes has none.
        let size = if blocks {
            config.capacity_blocks.min(1 << 16)
        } else {
            0
        };
        // The index starts larger than a new session needs (8 bytes a slot, and only its
        // control bytes are written): a session of up to 14,336 blocks then never grows it.
        // That is hashbrown's load (7/8) of 16k buckets: 16,384 slots asked for took 32k
        // buckets, twice the lines a session's probes spread over.
        let index = size.min(14 << 10);
        PagedCache {
            config,
            blocks: Vec::with_capacity(size),
            by_hash: HashTable::with_capacity(index),
            evictable: BinaryHeap::new(),
            listed: 0,
            next_seq: BACK,
            next_front: BACK - 1,
            allocations: 0,
            running: BinaryHeap::new(),
            runs: 0,
            stored: HashKeyed::default(),
            evicted_any: false,
            stale: Vec::with_capacity(STALE_BATCH),
            models: ByName::default(),
            streams: Streams::default(),
            reasoning: common::ReasoningIds::default(),
            hashes_only: (!blocks).then(Visible::default),
        }
    }

    /// Puts block `id` into, or takes it out of, the evictable set as its state says. A block
    /// already in the set keeps its entry: its stamp changes only once it is taken out.
    fn refresh(&mut self, id: usize) {
        let b = &mut self.blocks[id];
        let should = b.used && b.pins == 0 && b.children == 0;
        if should == b.evictable {
            return;
        }
        b.evictable = should;
        if !should {
            self.listed -= 1;
            return;
        }
        let stamp = b.stamp;
        self.listed += 1;
        self.evictable.push(Reverse((stamp, id as u32)));
        if self.evictable.len() > 2 * self.listed + 1024 {
            self.compact();
        }
    }

    /// Drops the entries of `evictable` that no longer count (and repeats of one that does).
    fn compact(&mut self) {
        let blocks = &self.blocks;
        let mut v = std::mem::take(&mut self.evictable).into_vec();
        v.retain(|&Reverse((stamp, id))| listed(blocks, stamp, id));
        v.sort_unstable();
        v.dedup();
        self.evictable = BinaryHeap::from(v);
    }

    /// The head of the free list (least stamp, then least id), dropping stale entries above it.
    fn first(&mut self) -> Option<(u64, usize)> {
        while let Some(&Reverse((stamp, id))) = self.evictable.peek() {
            if listed(&self.blocks, stamp, id) {
                return Some((stamp, id as usize));
            }
            self.evictable.pop();
        }
        None
    }

    fn pin(&mut self, id: usize) {
        self.blocks[id].pins += 1;
        if self.blocks[id].evictable {
            self.refresh(id);
        }
    }

    fn unpin(&mut self, id: usize) {
        let b = &mut self.blocks[id];
        b.pins = b.pins.saturating_sub(1);
        if b.pins == 0 && b.children == 0 {
            self.refresh(id);
        }
    }

    /// Frees the blocks of requests finished by `now`, each request tail first (V6), as vLLM's
    /// `BlockPool.free_blocks`: the request's cached blocks go to the back of the free list,
    /// its last full block first; its unhashed partial block goes to the front (vLLM's
    /// `prepend_n`, "LIFO reuse of non-cached blocks"), so it is the next block reused, before
    /// any never-used or cached one.
    fn release_finished(&mut self, now: u64) {
        while self.running.peek().is_some_and(|r| r.0 .0 <= now) {
            let Some(Reverse((_, _, end, held, extra))) = self.running.pop() else {
                break;
            };
            let partial = end != NIL && !self.blocks[end].hashed;
            let full = held - u64::from(partial);
            let seq = self.next_seq;
            self.next_seq += full;
            // Blocks pinned apart: freed in their place of the tail-first order.
            for (id, pos) in extra {
                self.unlist(id);
                let b = &mut self.blocks[id];
                b.stamp = b.stamp.max(seq + full.saturating_sub(1 + pos));
                self.unpin(id);
            }
            if end == NIL {
                continue;
            }
            let last_full = if partial {
                self.unlist(end);
                self.blocks[end].stamp = self.next_front;
                self.next_front -= 1;
                self.unpin(end);
                self.blocks[end].parent()
            } else {
                end
            };
            if last_full == NIL {
                continue;
            }
            self.unlist(last_full);
            let b = &mut self.blocks[last_full];
            b.stamp = b.stamp.max(seq);
            if !partial {
                self.unpin(last_full);
            } else {
                self.refresh(last_full);
            }
        }
    }

    /// Takes block `id` out of the evictable set (its stamp is about to change).
    fn unlist(&mut self, id: usize) {
        let b = &mut self.blocks[id];
        if b.evictable {
            b.evictable = false;
            self.listed -= 1;
        }
    }

    /// A block for new content: the head of vLLM's free list. That is a freed partial block
    /// if there is one (they are put in front), else a never-used one while the pool has room
    /// (they follow, in id order), else the least recently freed one (evicting its hash).
    fn allocate(&mut self) -> Option<usize> {
        let head = self.first();
        let front = head.is_some_and(|(stamp, _)| stamp < BACK);
        if !front && self.blocks.len() < self.config.capacity_blocks.min(MAX_BLOCKS) {
            self.blocks.push(Block::fresh());
            return Some(self.blocks.len() - 1);
        }
        let (stamp, id) = head?;
        // The victim's entry stays on top until its parent's entry (usually the next head)
        // replaces it: one sift down instead of a pop and a push, each across the heap.
        self.unlist(id);
        let parent = self.blocks[id].parent();
        if self.blocks[id].hashed {
            if !self.evicted_any {
                self.start_stored();
            }
            let b = &mut self.blocks[id];
            b.hashed = false;
            let k = b.key;
            self.forget(k, id);
        }
        if parent != NIL {
            // The parent was freed after this block by every release that freed both.
            self.blocks[parent].children -= 1;
            // The parent is usually the next victim (freed right after this block), and its
            // parent is then read: fetched now, while this block is filled.
            prefetch(&self.blocks, self.blocks[parent].parent());
            self.unlist(parent);
            let p = &mut self.blocks[parent];
            p.stamp = p.stamp.max(stamp + 1);
            if self.list_on_top(parent) {
                return Some(id);
            }
        }
        self.evictable.pop();
        Some(id)
    }

    /// The first eviction of cached content: until now every hash stored is still cached, so
    /// `stored` starts as the index's keys. (Reusing a freed partial block evicts nothing: it
    /// holds no hash, and a pool whose only reuses are those keeps no `stored` at all.)
    fn start_stored(&mut self) {
        self.evicted_any = true;
        debug_assert!(self.stale.is_empty(), "nothing was evicted before");
        let ids: Vec<usize> = self.by_hash.iter().map(|&s| slot_id(s)).collect();
        let firsts = first_blocks(&self.blocks, &ids);
        for id in ids {
            let (mk, h) = self.blocks[id].key;
            let first = self.blocks[firsts[id]].key.1;
            stored_of(&mut self.stored, mk, first).insert(h);
        }
    }

    /// [`PagedCache::refresh`] of a block just taken out of the evictable set, whose entry
    /// takes the place of the entry on top of `evictable` (the block just evicted); whether it
    /// did (else the top entry is still to be removed).
    fn list_on_top(&mut self, id: usize) -> bool {
        let b = &mut self.blocks[id];
        if b.evictable || !(b.used && b.pins == 0 && b.children == 0) {
            return false;
        }
        b.evictable = true;
        let stamp = b.stamp;
        self.listed += 1;
        if let Some(mut top) = self.evictable.peek_mut() {
            *top = Reverse((stamp, id as u32));
        }
        if self.evictable.len() > 2 * self.listed + 1024 {
            self.compact();
        }
        true
    }
}

impl PagedCache {
    /// Block `id`, holding `k`, is evicted: the hash is gone unless a copy takes it over (the
    /// oldest, next in the ring).
    fn forget(&mut self, k: (u64, u64), id: usize) {
        let b = &self.blocks[id];
        let (next, prev, copy) = (b.next_copy as usize, b.prev_copy as usize, b.copy);
        if !copy && next == id {
            // The block `by_hash` names, alone: its slot names nothing any more (the block is
            // no longer hashed) and goes with the next batch.
            self.stale.push(slot(tag_of(&k), id));
            if self.stale.len() == STALE_BATCH {
                self.drop_stale();
            }
        } else if !copy {
            // The oldest copy takes the slot over.
            let tag = tag_of(&k);
            let was = slot(tag, id);
            if let Ok(entry) = self.by_hash.find_entry(tag_hash(tag), |&s| s == was) {
                *entry.into_mut() = slot(tag, next);
            }
        }
        if next != id {
            self.blocks[prev].next_copy = next as u32;
            self.blocks[next].prev_copy = prev as u32;
            self.blocks[next].copy &= copy;
        }
    }

    /// A request runs until `completed` holding `held` = (its last block or `NIL`, blocks held,
    /// blocks pinned apart); its `partial` last block first takes a pool slot of its own.
    fn run_until(&mut self, completed: u64, held: (usize, u64, Vec<(usize, u64)>), partial: bool) {
        let (mut last, mut count, extra) = held;
        if partial {
            if let Some(id) = self.fill(None, last, completed) {
                if last != NIL {
                    self.unpin(last);
                }
                last = id;
                count += 1;
            }
        }
        self.running
            .push(Reverse((completed, self.runs, last, count, extra)));
        self.runs += 1;
    }

    /// Removes the slots of `stale` from `by_hash`, one after another: the removals are
    /// independent, so their cache misses overlap.
    fn drop_stale(&mut self) {
        for s in self.stale.drain(..) {
            if let Ok(entry) = self.by_hash.find_entry(tag_hash(slot_tag(s)), |&x| x == s) {
                entry.remove();
            }
        }
    }

    /// Allocates (or finds) the request's blocks from `known` on, each linked to the one before:
    /// the chain grows in `chain`; the rest of what the store needs comes back.
    fn link_blocks(
        &mut self,
        mk: u64,
        hashes: &[u64],
        known: usize,
        t: &Times,
        start_vis: u64,
        chain: &mut Vec<(usize, u64)>,
    ) -> Linked {
        let bs = self.config.block_size.max(1);
        let mut out = Linked {
            first_copy: usize::MAX,
            chain_vis: start_vis,
            prev: chain.last().map_or(NIL, |&(id, _)| id),
            extra: Vec::new(),
            stored_upto: known * bs,
            full_pool: false,
        };
        if out.prev != NIL {
            self.pin(out.prev);
        }
        for (i, h) in hashes.iter().enumerate().skip(known) {
            // Prompt blocks are cached when the request is scheduled (allocation); a request
            // scheduled later finds them. Generated blocks are counted once the reply is done.
            let vis = if i < t.prompt_blocks {
                t.now
            } else {
                t.completed
            };
            let found = if i < t.hit {
                self.find(&(mk, *h), t.now)
            } else {
                None
            };
            let id = match found {
                Some(id) => {
                    self.pin(id);
                    id
                }
                None => match self.fill(Some((mk, *h)), out.prev, vis) {
                    Some(id) => id,
                    None => {
                        out.full_pool = true; // every block is pinned: the rest is not cached
                        break;
                    }
                },
            };
            if out.prev != NIL {
                if self.blocks[id].parent() == out.prev {
                    self.unpin(out.prev);
                } else {
                    out.extra.push((out.prev, i as u64 - 1));
                }
            }
            let linked = self.blocks[id].parent() == out.prev;
            out.prev = id;
            if (self.blocks[id].copy || !linked) && out.first_copy == usize::MAX {
                out.first_copy = i;
            }
            out.chain_vis = out.chain_vis.max(self.blocks[id].visible_at);
            chain.push((id, self.blocks[id].generation));
            out.stored_upto = (i + 1) * bs;
        }
        out
    }

    /// The block holding `k` that a lookup at `now` finds: the oldest, or else the oldest copy
    /// already readable.
    fn find(&self, k: &(u64, u64), now: u64) -> Option<usize> {
        find(&self.blocks, &self.by_hash, k, now)
    }

    /// A new block for content `hash` (`None`: a partial block) after `parent`, pinned; `None`
    /// when every block is pinned.
    fn fill(&mut self, hash: Option<(u64, u64)>, parent: usize, vis: u64) -> Option<usize> {
        let id = self.allocate()?;
        // One probe: the block is a younger copy when its hash is cached already, else it is
        // the block the hash finds from now on.
        let blocks = &self.blocks;
        let head = match hash {
            Some(k) => {
                let tag = tag_of(&k);
                match self.by_hash.entry(
                    tag_hash(tag),
                    |&s| names(blocks, s, tag, &k),
                    |&s| tag_hash(slot_tag(s)),
                ) {
                    Entry::Occupied(o) => Some(slot_id(*o.get())),
                    Entry::Vacant(v) => {
                        v.insert(slot(tag, id));
                        None
                    }
                }
            }
            None => None,
        };
        // A copy joins the ring of its hash last (before the oldest, which closes it).
        let (next_copy, prev_copy) = match head {
            Some(h) => {
                let tail = self.blocks[h].prev_copy as usize;
                self.blocks[tail].next_copy = id as u32;
                self.blocks[h].prev_copy = id as u32;
                (h as u32, tail as u32)
            }
            None => (id as u32, id as u32),
        };
        self.blocks[id] = Block {
            key: hash.unwrap_or_default(),
            hashed: hash.is_some(),
            used: true,
            copy: head.is_some(),
            next_copy,
            prev_copy,
            parent: parent_id(parent),
            children: 0,
            pins: 1,
            stamp: 0,
            visible_at: vis,
            evictable: false,
            generation: self.allocations,
        };
        self.allocations += 1;
        if parent != NIL {
            self.blocks[parent].children += 1;
        }
        Some(id)
    }
}

/// Asks the CPU to bring block `id` (if there is one) into its cache ahead of use: evicting a
/// chain reads each block's parent, a cache miss per block when nothing fetches it ahead.
#[inline(always)]
fn prefetch(blocks: &[Block], id: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = blocks.get(id) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it reads nothing into the program and cannot fault,
        // and the address is that of a live block.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>((b as *const Block).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (blocks, id);
}

/// [`PagedCache::find`] over the cache's parts.
fn find(blocks: &[Block], by_hash: &HashTable<u64>, k: &(u64, u64), now: u64) -> Option<usize> {
    let head = indexed(blocks, by_hash, k)?;
    let mut id = head;
    loop {
        if blocks[id].visible_at <= now {
            return Some(id);
        }
        id = blocks[id].next_copy as usize;
        if id == head {
            return None;
        }
    }
}

/// The set of hashes stored under model key `mk` in chains whose first block hashes to
/// `first` (made empty if there is none yet).
fn stored_of(
    stored: &mut HashKeyed<(u64, u64), HashSetKeyed<u64>>,
    mk: u64,
    first: u64,
) -> &mut HashSetKeyed<u64> {
    stored.entry((mk, first)).or_default()
}

/// Adds `new`, consecutive block hashes of one chain, to `set`, a set of chained hashes that
/// holds every block before each of its hashes (each store adds a whole leading stretch of its
/// chain, and a chained hash fixes every block before it). So the hashes of `new` already there
/// are a leading part of it: found by bisection, a few probes, where a stream that went back to
/// a prompt cached before (by itself, as it alternates between contexts, or by another stream)
/// probed once per block; about three in four of the 710 traces' inserts were such repeats.
fn insert_chain(set: &mut HashSetKeyed<u64>, new: &[u64]) {
    let present = new.partition_point(|h| set.contains(h));
    set.extend(&new[present..]);
}

/// The first block of the chain of each of the cached blocks `ids`, by block id (found through
/// the parents, each chain walked once; a cached block's parent is cached as long as it is).
fn first_blocks(blocks: &[Block], ids: &[usize]) -> Vec<usize> {
    let mut first = vec![NIL; blocks.len()];
    let mut path = Vec::new();
    for &id in ids {
        let mut at = id;
        while first[at] == NIL {
            path.push(at);
            match blocks[at].parent() {
                NIL => {
                    first[at] = at;
                    break;
                }
                p => at = p,
            }
        }
        let root = first[at];
        for b in path.drain(..) {
            first[b] = root;
        }
    }
    first
}

/// 32 bits of key `k`'s hash (the hasher of the crate's hash-keyed maps): `by_hash` files the
/// key by them and keeps them in its slot.
fn tag_of(k: &(u64, u64)) -> u32 {
    (BuildHasherDefault::<PreHashed>::default().hash_one(k) >> 32) as u32
}

/// Where `by_hash` files a key with this tag (spread over all 64 bits, as the table asks).
fn tag_hash(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A slot of `by_hash`: block `id` (a pool holds at most [`MAX_BLOCKS`]) under its key's tag.
fn slot(tag: u32, id: usize) -> u64 {
    u64::from(tag) << 32 | id as u64
}

/// The block a slot of `by_hash` names.
fn slot_id(s: u64) -> usize {
    (s & u64::from(u32::MAX)) as usize
}

/// The tag a slot of `by_hash` is filed under.
fn slot_tag(s: u64) -> u32 {
    (s >> 32) as u32
}

/// Whether slot `s` of `by_hash` names the block found for key `k` (of tag `tag`): a slot of an
/// evicted block (see `PagedCache::stale`) names nothing, whatever its block holds since.
fn names(blocks: &[Block], s: u64, tag: u32, k: &(u64, u64)) -> bool {
    if slot_tag(s) != tag {
        return false;
    }
    let b = &blocks[slot_id(s)];
    b.hashed && !b.copy && b.key == *k
}

/// The block `by_hash` names for `k` (the oldest cached under it).
fn indexed(blocks: &[Block], by_hash: &HashTable<u64>, k: &(u64, u64)) -> Option<usize> {
    let tag = tag_of(k);
    by_hash
        .find(tag_hash(tag), |&s| names(blocks, s, tag, k))
        .map(|&s| slot_id(s))
}

/// Whether an entry (stamp, id) of the evictable set counts: its block is in the set with that
/// stamp.
fn listed(blocks: &[Block], stamp: u64, id: u32) -> bool {
    let b = &blocks[id as usize];
    b.evictable && b.stamp == stamp
}

/// What a stream's previous store left for the next lookup.
struct Prior<'a> {
    /// The blocks it held, in chain order (a pool that keeps blocks).
    chain: &'a [(usize, u64)],
    /// How many leading blocks it cached (a pool kept as hashes).
    held: usize,
    /// Their model key.
    model: u64,
    /// Upper bound of the times from which they are readable.
    vis: u64,
}

/// The lookup's scan of `hashes` at `now` in a pool's (blocks, index, or hashes only): how
/// many leading blocks are readable, and whether the block after them was ever cached
/// (readable or not; with a pool that keeps blocks, only while it still is).
fn scan(
    (blocks, by_hash, hashes_only): (&[Block], &HashTable<u64>, Option<&Visible>),
    prior: &Prior,
    hashes: &[u64],
    mk: u64,
    now: u64,
) -> (usize, bool) {
    // The blocks this stream held last time are still cached and readable: start past them.
    let readable = prior.vis <= now;
    if let Some(v) = hashes_only {
        let from = if readable && prior.model == mk {
            prior.held.min(hashes.len())
        } else {
            0
        };
        let matched = v.matched(mk, hashes, from, now);
        let in_flight = hashes.get(matched).is_some_and(|&h| v.cached(mk, h));
        return (matched, in_flight);
    }
    let mut matched = if readable {
        still_held(blocks, prior.chain, hashes, mk)
    } else {
        0
    };
    while matched < hashes.len() && find(blocks, by_hash, &(mk, hashes[matched]), now).is_some() {
        matched += 1;
    }
    let next = hashes.get(matched).map(|&h| (mk, h));
    let in_flight = next.is_some_and(|k| indexed(blocks, by_hash, &k).is_some());
    (matched, in_flight)
}

/// When a store's blocks become visible, and how many the lookup found.
struct Times {
    /// The request's send time: its prompt blocks are allocated then.
    now: u64,
    /// When its reply completed: its generated blocks are cached then.
    completed: u64,
    /// Full blocks of the prompt (the rest are generated).
    prompt_blocks: usize,
    /// Blocks the lookup found (shared, not allocated).
    hit: usize,
}

/// What linking a request's blocks leaves for the rest of its store.
struct Linked {
    /// The first block that is a younger copy or not linked to its predecessor (none: MAX).
    first_copy: usize,
    /// The latest visibility of a block of the chain.
    chain_vis: u64,
    /// The chain's last block (NIL: none).
    prev: usize,
    /// Blocks pinned off the chain (a found block whose parent differs), with their index.
    extra: Vec<(usize, u64)>,
    /// Tokens covered by the stored blocks.
    stored_upto: usize,
    /// Every block was pinned: the rest of the request is not cached.
    full_pool: bool,
}

/// How many leading blocks of `chain` still hold `hashes` (cached blocks form prefix-closed
/// chains, since leaves go first, so a binary search finds the end).
fn still_held(blocks: &[Block], chain: &[(usize, u64)], hashes: &[u64], mk: u64) -> usize {
    let n = chain.len().min(hashes.len());
    let held = |j: usize| {
        let (id, generation) = chain[j - 1];
        let b = &blocks[id];
        b.generation == generation && b.hashed && b.key == (mk, hashes[j - 1])
    };
    if n == 0 || held(n) {
        return n;
    }
    let (mut lo, mut hi) = (0, n); // held(lo) (or lo = 0), !held(hi)
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if held(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
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
        let bs = self.config.block_size.max(1) as u64;
        let others = self.models.any_other(&req.model);
        let fresh = !self.models.contains(&req.model);
        let state = self.models.get_or_insert_with(&req.model, || ModelState {
            key: model_key(&req.model),
            seen: SeenPrefixes::default(),
        });
        let mk = state.key;
        let st = self.streams.stream(&req.stream);
        let adv = st.auto.advance(req, bs as usize);
        let keep = (st.auto.cursor.start(adv.keep) / bs) as usize;
        st.chain.truncate(keep);
        st.held = st.held.min(keep);
        let prompt = st.auto.cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let hashes = st.auto.block_hashes(bs as usize);
        let prior = Prior {
            chain: &st.chain,
            held: st.held,
            model: st.chain_model,
            vis: st.chain_vis,
        };
        let pool = (&self.blocks[..], &self.by_hash, self.hashes_only.as_ref());
        let (matched, in_flight) = scan(pool, &prior, hashes, mk, now);
        // The explanation only asks whether the block after the match was ever cached (evicted,
        // or cached but not readable yet): a probe or two, not a walk of every block ever cached.
        let next = hashes.get(matched).map(|&h| (mk, h));
        let raw = matched
            + usize::from(
                in_flight
                    || next.is_some_and(|(mk, h)| {
                        self.stored
                            .get(&(mk, hashes[0]))
                            .is_some_and(|set| set.contains(&h))
                    }),
            );
        let cap = prompt.saturating_sub(1) / bs;
        let cached = bs * (matched as u64).min(cap);
        outcome.cached_tokens = cached;
        outcome.write_5m_tokens = (prompt / bs * bs).saturating_sub(cached);
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let cursor = &st.auto.cursor;
        let seen = state.seen.matches_from(cursor, now, &mut st.auto.seen);
        outcome.stop = if fresh {
            cursor.stop_at(cursor.len(), 0, common::cold_reason(others))
        } else {
            automatic_stop(
                cursor,
                cached,
                matched as u64 * bs,
                raw as u64 * bs,
                in_flight,
                false,
                seen,
                bs,
                BreakReason::Evicted,
                cursor.departure_stop(adv.departure),
            )
        };
        outcome
    }

    fn store(&mut self, req: &Request, outcome: &CacheOutcome, _visible: u64, completed: u64) {
        let bs = self.config.block_size.max(1);
        let Some(state) = self.models.get_mut(&req.model) else {
            return;
        };
        let mk = state.key;
        // Taken out while the pool changes; put back below.
        let mut st = std::mem::take(self.streams.stream(&req.stream));
        let adv = st.auto.advance(req, bs);
        let keep = st.auto.cursor.start(adv.keep) as usize / bs;
        st.chain.truncate(keep);
        st.held = st.held.min(keep);
        let n = req.segments.len();
        let prompt = st.auto.cursor.total() as usize;
        state
            .seen
            .record_seen_from(st.auto.cursor.hashes(), n, &mut st.auto.seen);
        st.auto.cursor.extend_generated(&mut self.reasoning, req);
        let total = st.auto.cursor.total() as usize;
        // The last sampled token is never fed back, so its KV is never computed.
        let computed = if total > prompt { total - 1 } else { total };
        let full = computed / bs;
        st.auto.block_hashes(bs);
        let times = Times {
            now: req.sent_at_ms,
            completed,
            prompt_blocks: prompt / bs,
            // The blocks the lookup found are shared; all others are new allocations.
            hit: (outcome.cached_tokens as usize / bs).min(full),
        };
        let stored_upto = match &mut self.hashes_only {
            Some(v) => store_hashes(v, &mut st, (mk, bs), full, &times) * bs,
            None => self.store_blocks(&mut st, mk, (full, computed % bs != 0), &times),
        };
        st.chain_model = mk;
        let state = self.models.get_mut(&req.model).expect("state exists");
        record_stored(
            &mut state.seen,
            &mut st.auto,
            n,
            stored_upto,
            (times.now, completed),
        );
        *self.streams.stream(&req.stream) = st;
    }
}

/// A store in a pool kept as hashes: caches the `full` blocks (of `bs` tokens, model key `mk`)
/// of the stream's cursor and returns how many it cached (all: an unbounded pool has room).
fn store_hashes(
    v: &mut Visible,
    st: &mut StreamState,
    (mk, bs): (u64, usize),
    full: usize,
    t: &Times,
) -> usize {
    let hashes = &st.auto.block_hashes(bs)[..full];
    // The blocks cached last time are still readable from the bound kept then.
    let known = if st.chain_vis <= t.now && st.chain_model == mk {
        st.held.min(t.hit)
    } else {
        0
    };
    st.chain_vis = v.store(&Stored {
        mk,
        hashes,
        known,
        hit: t.hit,
        prompt_blocks: t.prompt_blocks,
        now: t.now,
        completed: t.completed,
    });
    st.held = full;
    full
}

impl PagedCache {
    /// A store in a pool that keeps blocks: links the request's `full` blocks of the stream's
    /// cursor (finding or allocating each), then runs the request until it completes (its
    /// partial last block, when `partial`, taking a slot too). Returns the tokens cached.
    fn store_blocks(
        &mut self,
        st: &mut StreamState,
        mk: u64,
        (full, partial): (usize, bool),
        times: &Times,
    ) -> usize {
        let bs = self.config.block_size.max(1);
        let mut chain = std::mem::take(&mut st.chain);
        // The stream's previous store cached the leading blocks still in `chain` (the same
        // tokens, so the same hashes): they are in `stored` already.
        let prior = if st.chain_model == mk { chain.len() } else { 0 };
        let hashes = &st.auto.block_hashes(bs)[..full];
        // Blocks held last time, still cached and found again: the same blocks, unless one
        // was a younger copy (the lookup finds the oldest), from where `by_hash` decides.
        let known = if st.chain_vis <= times.now {
            still_held(&self.blocks, &chain, hashes, mk)
                .min(times.hit)
                .min(st.first_copy)
        } else {
            0
        };
        chain.truncate(known);
        let start_vis = if known > 0 { st.chain_vis } else { 0 };
        let Linked {
            first_copy,
            chain_vis,
            prev,
            extra,
            stored_upto,
            full_pool,
        } = self.link_blocks(mk, hashes, known, times, start_vis, &mut chain);
        let new = hashes.get(prior..chain.len()).unwrap_or_default();
        if self.evicted_any && !new.is_empty() {
            let set = stored_of(&mut self.stored, mk, hashes[0]);
            debug_assert!(prior == 0 || set.contains(&hashes[prior - 1]));
            insert_chain(set, new);
        }
        let partial = !full_pool && partial;
        self.run_until(times.completed, (prev, chain.len() as u64, extra), partial);
        st.chain = chain;
        st.chain_vis = chain_vis;
        st.first_copy = first_copy;
        stored_upto
    }
}

/// Records, for explanations, the segment prefixes of the stream's cursor that fit in the
/// `stored_upto` tokens a store cached: the prompt's `n` segments readable at `times.0`, the
/// generated ones at `times.1`.
fn record_stored(
    seen: &mut SeenPrefixes,
    auto: &mut AutoStream,
    n: usize,
    stored_upto: usize,
    (now, completed): (u64, u64),
) {
    let cursor = &auto.cursor;
    let k = cursor
        .ends()
        .partition_point(|&e| e as usize <= stored_upto);
    let kp = k.min(n);
    let all = cursor.len();
    let hashes = cursor.hashes();
    seen.record_continued_from(hashes, all, &mut auto.seen);
    seen.record_stored_from(hashes, (0, kp), now, &mut auto.seen);
    if k > n {
        seen.record_stored_from(hashes, (n, k), completed, &mut auto.seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{Level, RequestSettings, Role, Segment, SegmentKind};
    use std::sync::Arc;

    fn seg(id: u64, len: u32) -> Arc<Segment> {
        Arc::new(Segment {
            id,
            level: Level::Messages,
            kind: SegmentKind::Message(Role::User),
            label: format!("s{id}"),
            tokens: (0..len).map(|i| (id as u32) << 8 | i).collect(),
            breakpoint: None,
        })
    }

    fn send(c: &mut PagedCache, at: u64, segments: &[&Arc<Segment>]) -> CacheOutcome {
        send_on(c, "main", at, segments)
    }

    fn send_on(
        c: &mut PagedCache,
        stream: &str,
        at: u64,
        segments: &[&Arc<Segment>],
    ) -> CacheOutcome {
        let req = Request {
            index: 0,
            stream: stream.into(),
            step: 0,
            model: "m".into(),
            sent_at_ms: at,
            segments: segments.iter().map(|s| (*s).clone()).collect(),
            settings: RequestSettings::default(),
            reply: Vec::new(),
            output_tokens: 0,
        };
        let out = c.lookup(&req);
        c.store(&req, &out, at + 1000, at + 2000);
        out
    }

    #[test]
    fn a_chain_inserted_adds_only_its_hashes_not_there_yet() {
        // Two chains sharing their first three blocks, as two contexts of one stream.
        let a: Vec<u64> = (1..=6).collect();
        let b: Vec<u64> = [1, 2, 3, 40, 50].into();
        let mut set = HashSetKeyed::default();
        insert_chain(&mut set, &a[..4]);
        insert_chain(&mut set, &a[2..]); // its first two already there
        insert_chain(&mut set, &b[1..]); // two already there
        insert_chain(&mut set, &a[1..5]); // all there: nothing added
        let mut got: Vec<u64> = set.into_iter().collect();
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3, 4, 5, 6, 40, 50]);
    }

    /// A block is one cache line: a bounded pool reads one per block it evicts or finds.
    #[test]
    fn a_block_takes_64_bytes() {
        assert_eq!(std::mem::size_of::<Block>(), 64);
    }

    /// vLLM frees a finished request's blocks tail first to the back of the free list and
    /// evicts from the front (V6). Block size 2, a pool of 4 blocks:
    /// - A = [s1 (2 tokens), s2 (4)] takes blocks a1 a2 a3; freed tail first: a3, a2, a1.
    /// - B = [s1, s3 (2)] hits a1 (pinned again) and takes the last free slot for b2; freed:
    ///   b2, a1. Free list now a3, a2, b2, a1.
    /// - C = [s4 (4)] needs two blocks: evicts a3, then a2.
    /// - D = A again reads a1 only (2 tokens; a2 was evicted). Its store pins a1 and evicts
    ///   b2 (then c2, freed after b2 when C finished) for a2 and a3.
    /// - E = [s1, s3, s5] reads a1 only: b2 is gone (4 if b2 had been kept).
    #[test]
    fn eviction_follows_vllm_free_list_order() {
        let mut c = PagedCache::new(PagedConfig {
            block_size: 2,
            capacity_blocks: 4,
        });
        let (s1, s2, s3, s4, s5) = (seg(1, 2), seg(2, 4), seg(3, 2), seg(4, 4), seg(5, 2));
        assert_eq!(send(&mut c, 0, &[&s1, &s2]).cached_tokens, 0);
        assert_eq!(send(&mut c, 10_000, &[&s1, &s3]).cached_tokens, 2);
        assert_eq!(send(&mut c, 20_000, &[&s4]).cached_tokens, 0);
        let d = send(&mut c, 30_000, &[&s1, &s2]);
        assert_eq!(d.cached_tokens, 2);
        assert_eq!(d.stop.map(|s| s.reason), Some(BreakReason::Evicted));
        assert_eq!(send(&mut c, 40_000, &[&s1, &s3, &s5]).cached_tokens, 2);
    }

    /// Four sessions on one pool of three times the largest request (issue 18, item 8): vLLM's
    /// `free_blocks` puts a finished request's unhashed partial block at the front of the free
    /// list (`prepend_n`) and its cached blocks at the back, last full block first; allocation
    /// takes the front. Block size 2; every prompt is 5 tokens: 2 full blocks and a partial one;
    /// a pool of 9 blocks (3 × 3). Each request finishes before the next is sent.
    /// - A takes never-used n0 n1 n2 (a1 a2 pA). Freed: front [pA], back [a2 a1].
    /// - B takes pA (the front: no eviction), then never-used n3 n4. Free list:
    ///   [pB] n5..n8 [a2 a1 b2 b1].
    /// - C takes pB, n5, n6; D takes pC, n7, n8. Free list: [pD] [a2 a1 b2 b1 c2 c1 d2 d1]:
    ///   nothing cached was evicted.
    /// - A again hits a1 a2: 4 tokens (min(2 blocks, ⌊(5−1)/2⌋ = 2) × 2); its partial takes pD.
    ///   Free list: [pA'] [b2 b1 c2 c1 d2 d1 a2 a1].
    /// - B again hits b1 b2: 4 tokens.
    ///
    /// Had partial blocks been freed at the back with their request (tail first), D would have
    /// found the pool full and evicted pA, a2, a1, and A again would read nothing; its store
    /// would then have evicted pB, b2, b1, and B again would read nothing too.
    #[test]
    fn four_sessions_share_a_pool_with_partial_blocks_reused_first() {
        let mut c = PagedCache::new(PagedConfig {
            block_size: 2,
            capacity_blocks: 9,
        });
        let (a, b, cc, d) = (seg(1, 5), seg(2, 5), seg(3, 5), seg(4, 5));
        assert_eq!(send_on(&mut c, "a", 0, &[&a]).cached_tokens, 0);
        assert_eq!(send_on(&mut c, "b", 10_000, &[&b]).cached_tokens, 0);
        assert_eq!(send_on(&mut c, "c", 20_000, &[&cc]).cached_tokens, 0);
        assert_eq!(send_on(&mut c, "d", 30_000, &[&d]).cached_tokens, 0);
        assert_eq!(c.blocks.len(), 9, "every pool slot has been used once");
        let again = send_on(&mut c, "a", 40_000, &[&a]);
        assert_eq!(again.cached_tokens, 4);
        assert_eq!(send_on(&mut c, "b", 50_000, &[&b]).cached_tokens, 4);
        // C's and D's blocks are still cached too: nothing was evicted.
        assert_eq!(send_on(&mut c, "c", 60_000, &[&cc]).cached_tokens, 4);
        assert_eq!(send_on(&mut c, "d", 70_000, &[&d]).cached_tokens, 4);
    }

    /// "Evicted" needs the hash after the match to have been cached once, by any stream: the
    /// sets of stored hashes are kept per chain's first block, so a stream finds the blocks
    /// another stream cached under the same first block, whether they were cached before the
    /// first eviction (copied from the index then) or after it. The later prompts carry the
    /// same tokens in segments of other ids, so no segment-level record knows them: only the
    /// block hashes tell. Block size 2, a pool of 4.
    #[test]
    fn evicted_is_told_from_never_cached_across_streams() {
        let mut c = PagedCache::new(PagedConfig {
            block_size: 2,
            capacity_blocks: 4,
        });
        let reason = |o: &CacheOutcome| o.stop.as_ref().map(|s| s.reason);
        let same_tokens = |s: &Arc<Segment>, id: u64| {
            Arc::new(Segment {
                id,
                label: format!("s{id}"),
                ..(**s).clone()
            })
        };
        let (s1, s2, s3, s4, s5) = (seg(1, 8), seg(2, 4), seg(3, 2), seg(4, 6), seg(5, 2));
        // A caches s1's 4 blocks; B's 2 blocks evict the last two (tail first): the first
        // eviction.
        send_on(&mut c, "a", 0, &[&s1]);
        send_on(&mut c, "b", 10_000, &[&s2]);
        // C has s1's tokens: its first two blocks are still cached, the third was evicted.
        let o = send_on(&mut c, "c", 20_000, &[&same_tokens(&s1, 11), &s3]);
        assert_eq!(
            (o.cached_tokens, reason(&o)),
            (4, Some(BreakReason::Evicted))
        );
        // D's s4 was never cached: not an eviction. D caches it (after the first eviction).
        let o = send_on(&mut c, "d", 30_000, &[&s4]);
        assert_eq!(
            (o.cached_tokens, reason(&o)),
            (0, Some(BreakReason::PrefixChanged))
        );
        // B again: its blocks were evicted for C's and D's; it evicts D's last block.
        let o = send_on(&mut c, "b", 40_000, &[&s2]);
        assert_eq!(
            (o.cached_tokens, reason(&o)),
            (0, Some(BreakReason::Evicted))
        );
        // E has s4's tokens: two blocks still cached, the third evicted.
        let o = send_on(&mut c, "e", 50_000, &[&same_tokens(&s4, 14), &s5]);
        assert_eq!(
            (o.cached_tokens, reason(&o)),
            (4, Some(BreakReason::Evicted))
        );
    }
}
