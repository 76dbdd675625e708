//! SGLang RadixAttention-style cache: a radix tree over token ids (CACHE_SEMANTICS.md §4.2,
//! sgl-project/sglang `python/sglang/srt/mem_cache/radix_cache.py`, `managers/schedule_batch.py`).
//!
//! - Edges hold token runs; with `page_size > 1` matching compares whole pages and keys are cut
//!   to whole pages (G1).
//! - `match_prefix` returns the longest cached prefix, splitting an edge where the match ends
//!   and touching every node on the way (G2); the caller caps the hit at prompt − 1, aligned
//!   down to the page (G3).
//! - A finished request inserts prompt + output, page aligned (G4): the prompt, the reasoning
//!   and the visible reply, in that order. The next prompt repeats the reply but not the
//!   reasoning, so after a reply with reasoning the match ends at the previous prompt.
//! - Whether the last generated token is inserted depends on how SGLang ran: with its default
//!   overlap scheduler and a reply that ends on a stop token, the KV of every output token was
//!   computed (the overlapped step ran before the finish was seen) and all of them are
//!   inserted; without the overlap scheduler, or when a reply ends by length, the last token's
//!   KV never is (`cache_last_token = false`).
//! - A request's prompt is readable by requests scheduled after it: SGLang's scheduler holds
//!   back a waiting request that shares a prefix with one in the running prefill batch
//!   (in-batch prefix caching), so it matches once that prefill is in the tree. The API rule
//!   that an entry is readable only once the response has begun does not apply here. The
//!   generated tokens count from the reply's completion.
//! - Over capacity, whole unlocked leaves are evicted least recently used first; a parent left
//!   childless becomes a candidate (G5). Running requests lock their path until they complete.
//!
//! Every model has its own tree (the namespace of G1); capacity is shared.
//!
//! Cost per request is what it adds. Touches and locks are kept at the end of each path
//! only: a node's last access is the latest touch ending at or below it, so a leaf's own stamp
//! (raised by its evicted children's stamps) is exactly the value SGLang's eager updates would
//! give it, and only leaves are ever evicted; likewise a leaf is locked exactly when a running
//! request's path ends on it. Each stream remembers the node where its last stored sequence
//! ended, so a lookup or insert resumes there instead of comparing the shared prefix again.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde::{Deserialize, Serialize};

use super::common::{self, SeenPrefixes};
use super::cursor::{AutoStream, ByName, Cursor, Streams};
use super::{BreakReason, CacheModel, CacheOutcome};
use crate::prompt::{Request, TokenId};

/// Parameters of the radix cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadixConfig {
    /// Tokens per page (SGLang `--page-size`, default 1).
    pub page_size: usize,
    /// Tokens the tree may hold. Default 524,288, the same KV budget as `paged` (see there).
    pub capacity_tokens: usize,
    /// Insert the last generated token too (SGLang's default: overlap scheduler, reply ending
    /// on a stop token); `false` without the overlap scheduler or for replies cut by length.
    pub cache_last_token: bool,
}

impl Default for RadixConfig {
    fn default() -> Self {
        RadixConfig {
            page_size: 1,
            capacity_tokens: 524_288,
            cache_last_token: true,
        }
    }
}

impl super::Section for RadixConfig {
    fn check(&self) -> Result<(), String> {
        if self.page_size == 0 {
            return Err("page_size must be at least 1".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Node {
    key: Vec<TokenId>,
    children: HashMap<Vec<TokenId>, usize>,
    parent: usize,
    /// Tokens on the path before this node's key.
    start: usize,
    /// Latest touch ending here, or propagated from an evicted child (see the module doc).
    stamp: u64,
    /// Running requests whose locked path ends here.
    pins: u32,
    visible_at: u64,
    /// Latest `visible_at` on the path from the root to this node (inclusive).
    path_vis: u64,
    alive: bool,
}

impl Node {
    fn new(key: Vec<TokenId>, parent: &Node, start: usize, now: u64, visible_at: u64) -> Self {
        Node {
            key,
            children: HashMap::new(),
            parent: 0,
            start,
            stamp: now,
            pins: 0,
            visible_at,
            path_vis: parent.path_vis.max(visible_at),
            alive: true,
        }
    }

    fn end(&self) -> usize {
        self.start + self.key.len()
    }
}

#[derive(Debug)]
struct Tree {
    nodes: Vec<Node>,
    seen: SeenPrefixes,
}

/// A stream's cursor plus where its last stored sequence ended in the tree.
#[derive(Debug, Default)]
struct StreamState {
    auto: AutoStream,
    /// Node whose path spells the stream's last stored sequence (0: none, or the root).
    node: usize,
    /// Leading tokens of the cursor known to lie on the path to `node`.
    on_path: usize,
    /// Scratch buffer for the tokens past the resume point.
    tail: Vec<TokenId>,
}

impl StreamState {
    /// Moves to `req`; returns how the prompt relates to the stream's previous one.
    fn advance(&mut self, req: &Request) -> super::cursor::Advance {
        let adv = self.auto.advance(req, 1);
        if !adv.same_model {
            self.node = 0;
            self.on_path = 0;
        }
        self.on_path = self.on_path.min(self.auto.cursor.start(adv.keep) as usize);
        adv
    }
}

/// The SGLang-style radix cache.
#[derive(Debug)]
pub struct RadixCache {
    config: RadixConfig,
    trees: ByName<Tree>,
    total_tokens: usize,
    /// Running requests: (completes at, model, locked node).
    running: Vec<(u64, String, usize)>,
    /// Logical clock for LRU order (ties broken by request order, not wall time).
    tick: u64,
    streams: Streams<StreamState>,
    reasoning: common::ReasoningIds,
}

/// The cursor's tokens from `from` to `to`, into `v` (a buffer reused across requests).
fn tokens(cursor: &Cursor, from: usize, to: usize, v: &mut Vec<TokenId>) {
    v.clear();
    let Some(first) = cursor.segment_at(from as u64) else {
        return;
    };
    let mut pos = cursor.start(first) as usize;
    for s in &cursor.segments()[first..] {
        if pos >= to {
            break;
        }
        let lo = from.saturating_sub(pos).min(s.len());
        let hi = (to - pos).min(s.len());
        v.extend_from_slice(&s.tokens[lo..hi]);
        pos += s.len();
    }
}

impl Tree {
    fn new() -> Self {
        let root = Node {
            key: Vec::new(),
            children: HashMap::new(),
            parent: 0,
            start: 0,
            stamp: 0,
            pins: 0,
            visible_at: 0,
            path_vis: 0,
            alive: true,
        };
        Tree {
            nodes: vec![root],
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
            &self.nodes[parent],
            self.nodes[id].start,
            self.nodes[id].stamp,
            self.nodes[id].visible_at,
        );
        upper.parent = parent;
        let upper_id = self.nodes.len();
        upper.children.insert(self.page_key(&lower_key, page), id);
        self.nodes.push(upper);
        let first = self.page_key(&upper_key, page);
        self.nodes[parent].children.insert(first, upper_id);
        self.nodes[id].key = lower_key;
        self.nodes[id].parent = upper_id;
        self.nodes[id].start += at;
        upper_id
    }

    /// Where to resume matching a sequence whose first `known` tokens lie on the path to
    /// `node`: the deepest node on that path starting before `known` (page aligned), and the
    /// aligned position. The root and position 0 when nothing is known.
    fn resume_point(&self, node: usize, known: usize, page: usize) -> (usize, usize) {
        if node == 0 || !self.nodes.get(node).is_some_and(|n| n.alive) {
            return (0, 0);
        }
        let t = known.min(self.nodes[node].end()) / page * page;
        let mut u = node;
        while u != 0 && self.nodes[u].start >= t {
            u = self.nodes[u].parent;
        }
        (u, t)
    }

    /// Longest match of the sequence whose tokens from `base` on are `tail` (page aligned),
    /// resuming at node `u`, whose path holds the sequence's first `base` tokens (`u` = root
    /// and `base` = 0 to start from the top). Stops at nodes not yet readable at `now` when
    /// `now` is given. Returns (matched tokens, last node, stopped at an unreadable node).
    fn match_from(
        &mut self,
        u: usize,
        base: usize,
        tail: &[TokenId],
        page: usize,
        now: Option<u64>,
        tick: u64,
    ) -> (usize, usize, bool) {
        let mut node = u;
        let mut pos = base;
        let at = |pos: usize| &tail[pos - base..];
        if u != 0 && base > self.nodes[u].start {
            // Inside `u`'s edge: its first `off` tokens are known to match.
            let n = &self.nodes[u];
            let (start, klen) = (n.start, n.key.len());
            let off = base - start;
            let rest = at(base);
            let more = n.key[off..]
                .iter()
                .zip(rest)
                .take_while(|(a, b)| a == b)
                .count();
            let mut common = off + more;
            common -= common % page;
            self.nodes[u].stamp = tick;
            if common < klen {
                let upper = self.split(u, common, page);
                return (start + common, upper, false);
            }
            pos = start + klen;
        }
        let end = base + tail.len();
        let mut blocked = false;
        while pos + page <= end {
            let Some(&child) = self.nodes[node].children.get(&at(pos)[..page]) else {
                break;
            };
            if now.is_some_and(|t| self.nodes[child].visible_at > t) {
                blocked = true;
                break;
            }
            let ckey = &self.nodes[child].key;
            let klen = ckey.len();
            let rest = at(pos);
            // Whole-edge comparison first (a memcmp), token by token only where it differs.
            let mut common = if rest.len() >= klen && ckey[..] == rest[..klen] {
                klen
            } else {
                ckey.iter().zip(rest).take_while(|(a, b)| a == b).count()
            };
            common -= common % page;
            self.nodes[child].stamp = tick;
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

    /// Inserts the sequence whose tokens from `base` on are `tail` (page aligned), resuming at
    /// `u` as in [`Tree::match_from`]; new nodes are readable from `visible_at`. Returns the
    /// last node and the number of new tokens.
    fn insert_from(
        &mut self,
        u: usize,
        base: usize,
        tail: &[TokenId],
        page: usize,
        visible_at: u64,
        tick: u64,
    ) -> (usize, usize) {
        let len = (base + tail.len()) / page * page;
        let tail = &tail[..len.saturating_sub(base)];
        let (pos, node, _) = self.match_from(u, base, tail, page, None, tick);
        if pos == len {
            return (node, 0);
        }
        let key = tail[pos - base..].to_vec();
        let first = self.page_key(&key, page);
        let id = self.nodes.len();
        let mut n = Node::new(key, &self.nodes[node], pos, tick, visible_at);
        n.parent = node;
        self.nodes.push(n);
        self.nodes[node].children.insert(first, id);
        (id, len - pos)
    }
}

impl RadixCache {
    pub fn new(config: RadixConfig) -> Self {
        RadixCache {
            config,
            trees: ByName::default(),
            total_tokens: 0,
            running: Vec::new(),
            tick: 0,
            streams: Streams::default(),
            reasoning: common::ReasoningIds::default(),
        }
    }

    fn release_finished(&mut self, now: u64) {
        let trees = &mut self.trees;
        self.running.retain(|(t, model, node)| {
            if *t > now {
                return true;
            }
            if let Some(tree) = trees.get_mut(model) {
                let n = &mut tree.nodes[*node];
                n.pins = n.pins.saturating_sub(1);
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
        for (model, tree) in self.trees.iter() {
            for (id, n) in tree.nodes.iter().enumerate() {
                if id != 0 && n.alive && n.children.is_empty() && n.pins == 0 {
                    heap.push(Reverse((n.stamp, model.to_string(), id)));
                }
            }
        }
        while self.total_tokens > self.config.capacity_tokens {
            let Some(Reverse((stamp, model, id))) = heap.pop() else {
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
            // Every touch that reached the leaf passed its parent.
            let p = &mut tree.nodes[parent];
            p.stamp = p.stamp.max(stamp);
            if parent != 0 && p.children.is_empty() && p.pins == 0 {
                heap.push(Reverse((p.stamp, model.clone(), parent)));
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
        let others = self.trees.any_other(&req.model);
        let st = self.streams.stream(&req.stream);
        let adv = st.advance(req);
        let cursor = &st.auto.cursor;
        let prompt = cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let Some(tree) = self.trees.get_mut(&req.model) else {
            outcome.write_5m_tokens = prompt / page as u64 * page as u64;
            outcome.uncached_input_tokens = prompt - outcome.write_5m_tokens;
            outcome.stop = cursor.stop_at(cursor.len(), 0, common::cold_reason(others));
            return outcome;
        };
        // Resume where the stream's last sequence ended, if that whole path is readable now.
        let (mut u, mut base) = tree.resume_point(st.node, st.on_path, page);
        if tree.nodes[u].path_vis > now {
            (u, base) = (0, 0);
        }
        let mut tail = std::mem::take(&mut st.tail);
        tokens(cursor, base, prompt as usize, &mut tail);
        let (matched, _, blocked) = tree.match_from(u, base, &tail, page, Some(now), self.tick);
        st.tail = tail;
        let cap = prompt.saturating_sub(1) as usize / page * page;
        let cached = matched.min(cap) as u64;
        outcome.cached_tokens = cached;
        outcome.write_5m_tokens = (prompt / page as u64 * page as u64).saturating_sub(cached);
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let seen = tree.seen.matches_from(cursor, now, &mut st.auto.seen);
        let cursor = &st.auto.cursor;
        outcome.stop = common::automatic_stop(
            cursor,
            cached,
            matched as u64,
            matched as u64 + u64::from(blocked),
            blocked,
            false,
            seen,
            page as u64,
            BreakReason::Evicted,
            cursor.departure_stop(adv.departure),
        );
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, _visible: u64, completed: u64) {
        let page = self.config.page_size.max(1);
        self.tick += 1;
        let tick = self.tick;
        let tree = self.trees.get_or_insert_with(&req.model, Tree::new);
        let st = self.streams.stream(&req.stream);
        st.advance(req);
        let n = req.segments.len();
        tree.seen
            .record_seen_from(st.auto.cursor.hashes(), n, &mut st.auto.seen);
        let prompt = st.auto.cursor.total() as usize;
        let (u, base) = tree.resume_point(st.node, st.on_path, page);
        let mut tail = std::mem::take(&mut st.tail);
        tokens(&st.auto.cursor, base, prompt, &mut tail);
        let now = req.sent_at_ms;
        let (mid, added_prompt) = tree.insert_from(u, base, &tail, page, now, tick);
        st.auto.cursor.extend(&self.reasoning.generated(req));
        let mut full = st.auto.cursor.total() as usize;
        if !self.config.cache_last_token && full > prompt {
            full -= 1;
        }
        let from = tree.nodes[mid].end();
        tokens(&st.auto.cursor, from, full, &mut tail);
        let (last, added_reply) = tree.insert_from(mid, from, &tail, page, completed, tick);
        st.tail = tail;
        tree.nodes[last].pins += 1;
        st.node = last;
        st.on_path = tree.nodes[last].end();
        let stored = full / page * page;
        let cursor = &st.auto.cursor;
        let k = cursor.ends().partition_point(|&e| e as usize <= stored);
        let all = cursor.len();
        let hashes = cursor.hashes();
        tree.seen
            .record_continued_from(hashes, all, &mut st.auto.seen);
        tree.seen
            .record_stored_from(hashes, (0, k.min(n)), now, &mut st.auto.seen);
        if k > n {
            tree.seen
                .record_stored_from(hashes, (n, k), completed, &mut st.auto.seen);
        }
        self.running.push((completed, req.model.clone(), last));
        self.total_tokens += added_prompt + added_reply;
        self.evict();
    }
}
