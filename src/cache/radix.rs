//! SGLang RadixAttention-style cache: a radix tree over token ids (CACHE_SEMANTICS.md §4.2,
//! sgl-project/sglang `python/sglang/srt/mem_cache/radix_cache.py`, `managers/schedule_batch.py`).
//!
//! - Edges hold token runs; with `page_size > 1` matching compares whole pages and keys are cut
//!   to whole pages (G1).
//! - `match_prefix` returns the longest cached prefix, splitting an edge where the match ends
//!   and touching every node on the way (G2); the caller caps the hit at prompt − 1, aligned
//!   down to the page (G3).
//! - A finished request inserts prompt + output, page aligned (G4): here the visible reply,
//!   since reasoning tokens are not repeated by the next prompt (§8).
//! - Over capacity, whole unlocked leaves are evicted least recently used first; a parent left
//!   childless becomes a candidate (G5). Running requests lock their path until they complete.
//!
//! Every model has its own tree (the namespace of G1); capacity is shared.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::common::{self, SeenPrefixes, StreamHistory};
use super::{BreakReason, CacheModel, CacheOutcome};
use crate::prompt::{Request, Segment, TokenId};

/// Parameters of the radix cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadixConfig {
    /// Tokens per page (SGLang `--page-size`, default 1).
    pub page_size: usize,
    /// Tokens the tree may hold. Default 524,288, the same KV budget as `paged` (see there).
    pub capacity_tokens: usize,
}

impl Default for RadixConfig {
    fn default() -> Self {
        RadixConfig {
            page_size: 1,
            capacity_tokens: 524_288,
        }
    }
}

#[derive(Debug, Clone)]
struct Node {
    key: Vec<TokenId>,
    children: HashMap<Vec<TokenId>, usize>,
    parent: usize,
    last_access: u64,
    lock: u32,
    visible_at: u64,
    alive: bool,
}

impl Node {
    fn new(key: Vec<TokenId>, parent: usize, now: u64, visible_at: u64) -> Self {
        Node {
            key,
            children: HashMap::new(),
            parent,
            last_access: now,
            lock: 0,
            visible_at,
            alive: true,
        }
    }
}

#[derive(Debug)]
struct Tree {
    nodes: Vec<Node>,
    seen: SeenPrefixes,
}

/// The SGLang-style radix cache.
#[derive(Debug)]
pub struct RadixCache {
    config: RadixConfig,
    trees: HashMap<String, Tree>,
    total_tokens: usize,
    /// Running requests: (completes at, model, locked node).
    running: Vec<(u64, String, usize)>,
    /// Logical clock for LRU order (ties broken by request order, not wall time).
    tick: u64,
    streams: StreamHistory,
}

fn flat(segments: &[Arc<Segment>]) -> Vec<TokenId> {
    let mut v = Vec::with_capacity(segments.iter().map(|s| s.len()).sum());
    for s in segments {
        v.extend_from_slice(&s.tokens);
    }
    v
}

impl Tree {
    fn new() -> Self {
        Tree {
            nodes: vec![Node::new(Vec::new(), 0, 0, 0)],
            seen: SeenPrefixes::default(),
        }
    }

    fn page_key(&self, tokens: &[TokenId], page: usize) -> Vec<TokenId> {
        tokens[..page.min(tokens.len())].to_vec()
    }

    /// Splits node `id` after `at` tokens; returns the new upper node.
    fn split(&mut self, id: usize, at: usize, page: usize) -> usize {
        let parent = self.nodes[id].parent;
        let upper_key = self.nodes[id].key[..at].to_vec();
        let lower_key = self.nodes[id].key[at..].to_vec();
        let mut upper = Node::new(
            upper_key.clone(),
            parent,
            self.nodes[id].last_access,
            self.nodes[id].visible_at,
        );
        upper.lock = self.nodes[id].lock;
        let upper_id = self.nodes.len();
        upper.children.insert(self.page_key(&lower_key, page), id);
        self.nodes.push(upper);
        let first = self.page_key(&upper_key, page);
        self.nodes[parent].children.insert(first, upper_id);
        self.nodes[id].key = lower_key;
        self.nodes[id].parent = upper_id;
        upper_id
    }

    /// Longest match of `tokens` (page aligned); stops at nodes not yet readable at `now` when
    /// `now` is given. Returns (matched tokens, last node, stopped at an unreadable node).
    fn match_prefix(
        &mut self,
        tokens: &[TokenId],
        page: usize,
        now: Option<u64>,
        tick: u64,
    ) -> (usize, usize, bool) {
        let mut node = 0usize;
        let mut pos = 0usize;
        let mut blocked = false;
        while pos + page <= tokens.len() {
            let key = self.page_key(&tokens[pos..], page);
            let Some(&child) = self.nodes[node].children.get(&key) else {
                break;
            };
            if now.is_some_and(|t| self.nodes[child].visible_at > t) {
                blocked = true;
                break;
            }
            let ckey = &self.nodes[child].key;
            let klen = ckey.len();
            let rest = &tokens[pos..];
            // Whole-edge comparison first (a memcmp), token by token only where it differs.
            let mut common = if rest.len() >= klen && ckey[..] == rest[..klen] {
                klen
            } else {
                ckey.iter().zip(rest).take_while(|(a, b)| a == b).count()
            };
            common -= common % page;
            self.nodes[child].last_access = tick;
            if common < klen {
                let upper = if common > 0 {
                    self.split(child, common, page)
                } else {
                    node
                };
                pos += common;
                node = upper;
                break;
            }
            pos += common;
            node = child;
        }
        (pos, node, blocked)
    }

    /// Inserts `tokens` (page aligned), new nodes readable from `visible_at`; returns the last
    /// node and the number of new tokens.
    fn insert(
        &mut self,
        tokens: &[TokenId],
        page: usize,
        visible_at: u64,
        tick: u64,
    ) -> (usize, usize) {
        let len = tokens.len() / page * page;
        let tokens = &tokens[..len];
        let (pos, node, _) = self.match_prefix(tokens, page, None, tick);
        // Content already present but not yet visible becomes visible at the earlier time.
        if pos == len {
            return (node, 0);
        }
        let key = tokens[pos..].to_vec();
        let first = self.page_key(&key, page);
        let id = self.nodes.len();
        self.nodes.push(Node::new(key, node, tick, visible_at));
        self.nodes[node].children.insert(first, id);
        (id, len - pos)
    }

    fn path(&self, mut id: usize) -> Vec<usize> {
        let mut out = Vec::new();
        while id != 0 {
            out.push(id);
            id = self.nodes[id].parent;
        }
        out
    }
}

impl RadixCache {
    pub fn new(config: RadixConfig) -> Self {
        RadixCache {
            config,
            trees: HashMap::new(),
            total_tokens: 0,
            running: Vec::new(),
            tick: 0,
            streams: StreamHistory::default(),
        }
    }

    fn release_finished(&mut self, now: u64) {
        let trees = &mut self.trees;
        self.running.retain(|(t, model, node)| {
            if *t > now {
                return true;
            }
            if let Some(tree) = trees.get_mut(model) {
                for id in tree.path(*node) {
                    tree.nodes[id].lock = tree.nodes[id].lock.saturating_sub(1);
                }
            }
            false
        });
    }

    /// Evicts unlocked leaves, least recently used first, until the tree fits (G5).
    fn evict(&mut self) {
        if self.total_tokens <= self.config.capacity_tokens {
            return;
        }
        let mut heap: BinaryHeap<Reverse<(u64, String, usize)>> = BinaryHeap::new();
        for (model, tree) in &self.trees {
            for (id, n) in tree.nodes.iter().enumerate() {
                if id != 0 && n.alive && n.children.is_empty() && n.lock == 0 {
                    heap.push(Reverse((n.last_access, model.clone(), id)));
                }
            }
        }
        while self.total_tokens > self.config.capacity_tokens {
            let Some(Reverse((_, model, id))) = heap.pop() else {
                break;
            };
            let page = self.config.page_size.max(1);
            let tree = self.trees.get_mut(&model).expect("tree of a leaf");
            let parent = tree.nodes[id].parent;
            let key = tree.page_key(&tree.nodes[id].key, page);
            tree.nodes[parent].children.remove(&key);
            tree.nodes[id].alive = false;
            self.total_tokens -= tree.nodes[id].key.len();
            tree.nodes[id].key = Vec::new();
            let p = &tree.nodes[parent];
            if parent != 0 && p.children.is_empty() && p.lock == 0 {
                heap.push(Reverse((p.last_access, model.clone(), parent)));
            }
        }
    }
}

impl CacheModel for RadixCache {
    fn name(&self) -> &str {
        "radix"
    }

    fn charges_writes(&self) -> bool {
        false
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let now = req.sent_at_ms;
        self.release_finished(now);
        self.tick += 1;
        let page = self.config.page_size.max(1);
        let prompt = req.prompt_tokens();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let others = self.trees.keys().any(|m| m != &req.model);
        let seg_hashes = common::segment_hashes(req.segments.iter());
        let ends = common::segment_ends(&req.segments);
        let departure = self.streams.departure(req, &seg_hashes);
        self.streams.record(req, seg_hashes.clone());
        let Some(tree) = self.trees.get_mut(&req.model) else {
            outcome.write_5m_tokens = prompt / page as u64 * page as u64;
            outcome.uncached_input_tokens = prompt - outcome.write_5m_tokens;
            outcome.stop = common::stop_at(req, 0, common::cold_reason(others));
            return outcome;
        };
        let tokens = flat(&req.segments);
        let (matched, _, blocked) = tree.match_prefix(&tokens, page, Some(now), self.tick);
        let cap = prompt.saturating_sub(1) as usize / page * page;
        let cached = matched.min(cap) as u64;
        outcome.cached_tokens = cached;
        outcome.write_5m_tokens = (prompt / page as u64 * page as u64).saturating_sub(cached);
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let seen = tree.seen.matches(&seg_hashes, &ends, now);
        outcome.stop = common::automatic_stop(
            req,
            cached,
            matched as u64,
            matched as u64 + u64::from(blocked),
            blocked,
            false,
            seen,
            page as u64,
            BreakReason::Evicted,
            common::departure_stop(req, departure, &ends),
        );
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, visible_at: u64, completed: u64) {
        let page = self.config.page_size.max(1);
        self.tick += 1;
        let tick = self.tick;
        let tree = self
            .trees
            .entry(req.model.clone())
            .or_insert_with(Tree::new);
        let all: Vec<Arc<Segment>> = req.segments.iter().chain(&req.reply).cloned().collect();
        let seg_hashes = common::segment_hashes(all.iter());
        let n = req.segments.len();
        tree.seen.record_seen(&seg_hashes[..n]);
        let prompt_tokens = flat(&req.segments);
        let (_, added_prompt) = tree.insert(&prompt_tokens, page, visible_at, tick);
        let mut full = prompt_tokens;
        for s in &req.reply {
            full.extend_from_slice(&s.tokens);
        }
        let (last, added_reply) = tree.insert(&full, page, completed, tick);
        for id in tree.path(last) {
            tree.nodes[id].lock += 1;
        }
        let stored = full.len() / page * page;
        let ends = common::segment_ends(&all);
        let k = ends.iter().take_while(|&&e| e as usize <= stored).count();
        tree.seen.record_continued(&seg_hashes);
        tree.seen.record_stored(&seg_hashes[..k.min(n)], visible_at);
        if k > n {
            tree.seen.record_stored(&seg_hashes[n..k], completed);
        }
        self.running.push((completed, req.model.clone(), last));
        self.total_tokens += added_prompt + added_reply;
        self.evict();
    }
}
