//! SGLang RadixAttention-style cache: a radix tree over token ids (docs/cache-models.md, *radix*;
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
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};
mod key;

use key::{Key, Tail};

use super::common::{self, work, HashKeyed, SeenPrefixes};
use super::cursor::{automatic_stop, AutoStream, ByName, Cursor, Streams};
use super::{BreakReason, CacheModel, CacheOutcome};
use crate::prompt::Request;

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
    fn check(&self) -> Result<(), super::CacheError> {
        if self.page_size == 0 {
            return Err(super::CacheError::Zero { key: "page_size" });
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Node {
    /// The edge's token run (page aligned), borrowed from the segments it came from.
    key: Key,
    /// Children by [`key::page_key`] of their key's first page.
    children: Children,
    /// Parent node (the root is its own).
    parent: usize,
    /// Tokens on the path before this node's key.
    start: usize,
    /// Latest touch ending here, or propagated from an evicted child (see the module doc).
    stamp: u64,
    /// Running requests whose locked path ends here.
    pins: u32,
    /// When the node's tokens become readable (ms): the request's send for a prompt,
    /// its completion for generated tokens.
    visible_at: u64,
    /// Latest `visible_at` on the path from the root to this node (inclusive).
    path_vis: u64,
    /// Still in the tree (evicted nodes keep their slot).
    alive: bool,
    /// The stamp under which the node is in its tree's `leaves` (an unlocked leaf).
    listed: Option<u64>,
}

/// A node's children by page key: the first one inline (most nodes of a conversation's tree
/// have one child, and a map per node cost an allocation and its growth), the others in a map.
#[derive(Debug, Clone, Default)]
struct Children {
    /// The first child: (page key, node index).
    one: Option<(u64, usize)>,
    /// The other children, by page key (allocated when a second child arrives).
    more: Option<Box<HashKeyed<u64, usize>>>,
}

impl Children {
    fn get(&self, k: &u64) -> Option<&usize> {
        match &self.one {
            Some((o, v)) if o == k => Some(v),
            _ => self.more.as_ref()?.get(k),
        }
    }

    fn insert(&mut self, k: u64, v: usize) {
        match &mut self.one {
            Some((o, slot)) if *o == k => *slot = v,
            None if self.more.as_ref().is_none_or(|m| !m.contains_key(&k)) => {
                self.one = Some((k, v))
            }
            _ => {
                self.more.get_or_insert_with(Default::default).insert(k, v);
            }
        }
    }

    fn remove(&mut self, k: &u64) {
        match &self.one {
            Some((o, _)) if o == k => self.one = None,
            _ => {
                if let Some(m) = &mut self.more {
                    m.remove(k);
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.one.is_none() && self.more.as_ref().is_none_or(|m| m.is_empty())
    }
}

impl Node {
    fn new(key: Key, parent: &Node, start: usize, now: u64, visible_at: u64) -> Self {
        Node {
            key,
            children: Children::default(),
            parent: 0,
            start,
            stamp: now,
            pins: 0,
            visible_at,
            path_vis: parent.path_vis.max(visible_at),
            alive: true,
            listed: None,
        }
    }

    fn end(&self) -> usize {
        self.start + self.key.len()
    }
}

#[derive(Debug)]
struct Tree {
    /// Node 0 is the root.
    nodes: Vec<Node>,
    /// Unlocked leaves by (stamp, node), least recently used on top: the eviction candidates.
    /// Lazy: an entry whose node is no longer listed under that stamp (see [`Node::listed`])
    /// is stale and skipped, so a touch costs a push instead of a removal and an insert.
    leaves: BinaryHeap<Reverse<(u64, usize)>>,
    /// Nodes listed in `leaves` under their current stamp (the heap is compacted when its
    /// stale entries outnumber them).
    listed: usize,
    /// What was stored and seen, to explain breaks.
    seen: SeenPrefixes,
}

/// A stream's cursor plus where its last stored sequence ended in the tree.
#[derive(Debug, Default)]
struct StreamState {
    /// The stream's cursor and seen memo.
    auto: AutoStream,
    /// Node whose path spells the stream's last stored sequence (0: none, or the root).
    node: usize,
    /// Leading tokens of the cursor known to lie on the path to `node`.
    on_path: usize,
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
    /// The parameters it runs with.
    config: RadixConfig,
    /// One tree per model (the model is the namespace).
    trees: ByName<Tree>,
    /// Tokens held over all trees, against `capacity_tokens`.
    total_tokens: usize,
    /// Running requests: (completes at, tree position in `trees`, locked node).
    running: Vec<(u64, usize, usize)>,
    /// Logical clock for LRU order (ties broken by request order, not wall time).
    tick: u64,
    /// Each stream's cursor and resume point in its tree.
    streams: Streams<StreamState>,
    /// Hands out the ids of reasoning tokens, unique across requests.
    reasoning: common::ReasoningIds,
}

/// The index of the segment holding token `pos` of `cursor` (the segment count past the
/// end): a few steps back from the end, where a stream's resume point usually lies, else a
/// binary search.
fn segment_near_end(cursor: &Cursor, pos: usize) -> usize {
    let ends = cursor.ends();
    let mut i = ends.len();
    for _ in 0..8 {
        if i == 0 || (ends[i - 1] as usize) <= pos {
            return i;
        }
        i -= 1;
    }
    ends.partition_point(|&e| e as usize <= pos)
}

impl Tree {
    /// Nodes a new tree has room for before its node vector grows.
    const NODES: usize = 512;

    fn new() -> Self {
        let root = Node {
            key: Key::default(),
            children: Children::default(),
            parent: 0,
            start: 0,
            stamp: 0,
            pins: 0,
            visible_at: 0,
            path_vis: 0,
            alive: true,
            listed: None,
        };
        // Sized for a few hundred requests' nodes instead of growing from empty (each growth
        // copied every node).
        let mut nodes = Vec::with_capacity(Tree::NODES);
        nodes.push(root);
        Tree {
            nodes,
            leaves: BinaryHeap::with_capacity(Tree::NODES / 2),
            listed: 0,
            seen: SeenPrefixes::default(),
        }
    }

    /// Puts node `id` into `leaves`, or takes it out, or moves it, as its state says (taking
    /// out only marks the heap's entry stale).
    fn sync(&mut self, id: usize) {
        let n = &self.nodes[id];
        let want = (id != 0 && n.alive && n.children.is_empty() && n.pins == 0).then_some(n.stamp);
        if n.listed == want {
            return;
        }
        work::add(1);
        self.listed -= usize::from(n.listed.is_some());
        self.listed += usize::from(want.is_some());
        self.nodes[id].listed = want;
        if let Some(s) = want {
            self.leaves.push(Reverse((s, id)));
            if self.leaves.len() > 2 * self.listed + 64 {
                self.compact();
            }
        }
    }

    /// Whether a heap entry is current: its node is listed under that stamp.
    fn current(&self, (stamp, id): (u64, usize)) -> bool {
        self.nodes[id].listed == Some(stamp)
    }

    /// Drops the stale entries of `leaves` (and repeated current ones).
    fn compact(&mut self) {
        let mut v = std::mem::take(&mut self.leaves).into_vec();
        work::add(v.len() as u64);
        v.retain(|e| self.current(e.0));
        v.sort_unstable();
        v.dedup();
        self.leaves = BinaryHeap::from(v);
    }

    /// The least recently used unlocked leaf, as (stamp, node), dropping stale entries on top.
    fn oldest_leaf(&mut self) -> Option<(u64, usize)> {
        while let Some(&Reverse(e)) = self.leaves.peek() {
            if self.current(e) {
                return Some(e);
            }
            self.leaves.pop();
        }
        None
    }

    /// Sets node `id`'s stamp (a touch).
    fn touch(&mut self, id: usize, tick: u64) {
        self.nodes[id].stamp = tick;
        self.sync(id);
    }

    /// The child of `node` whose key starts with the `page` tokens of `tail` from `pos`.
    fn child(&self, node: usize, tail: &mut Tail, pos: usize, page: usize) -> Option<usize> {
        let &c = self.nodes[node].children.get(&tail.page_key(pos, page))?;
        (page <= 2 || tail.common(&self.nodes[c].key, 0, pos, pos + page) == page).then_some(c)
    }

    /// Splits node `id` after `at` tokens; returns the new upper node.
    fn split(&mut self, id: usize, at: usize, page: usize) -> usize {
        let parent = self.nodes[id].parent;
        let mut upper_key = std::mem::take(&mut self.nodes[id].key);
        let lower_key = upper_key.split_off(at);
        let first = upper_key.page_key(page);
        let mut upper = Node::new(
            upper_key,
            &self.nodes[parent],
            self.nodes[id].start,
            self.nodes[id].stamp,
            self.nodes[id].visible_at,
        );
        upper.parent = parent;
        let upper_id = self.nodes.len();
        upper.children.insert(lower_key.page_key(page), id);
        self.nodes.push(upper);
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

    /// Longest match of the sequence whose tokens from `tail.base` on are `tail` (page
    /// aligned), resuming at node `u`, whose path holds the sequence's first `tail.base`
    /// tokens (`u` = root and base 0 to start from the top). Stops at nodes not yet readable
    /// at `now` when `now` is given. Returns (matched tokens, last node, stopped at an
    /// unreadable node).
    fn match_from(
        &mut self,
        u: usize,
        tail: &mut Tail,
        page: usize,
        now: Option<u64>,
        tick: u64,
    ) -> (usize, usize, bool) {
        let base = tail.base;
        let mut node = u;
        let mut pos = base;
        if u != 0 && base > self.nodes[u].start {
            // Inside `u`'s edge: its first `off` tokens are known to match.
            let n = &self.nodes[u];
            let (start, klen) = (n.start, n.key.len());
            let off = base - start;
            let more = tail.common(&n.key, off, base, start + klen);
            work::add(more as u64 + 1);
            let mut common = off + more;
            common -= common % page;
            self.touch(u, tick);
            if common < klen {
                let upper = self.split(u, common, page);
                return (start + common, upper, false);
            }
            pos = start + klen;
        }
        let end = tail.end;
        let mut blocked = false;
        while pos + page <= end {
            let Some(child) = self.child(node, tail, pos, page) else {
                break;
            };
            if now.is_some_and(|t| self.nodes[child].visible_at > t) {
                blocked = true;
                break;
            }
            let ckey = &self.nodes[child].key;
            let klen = ckey.len();
            let mut common = tail.common(ckey, 0, pos, pos + klen);
            work::add(common as u64 + 1);
            common -= common % page;
            self.touch(child, tick);
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

    /// Inserts the sequence `tail` (cut to whole pages), resuming at `u` as in
    /// [`Tree::match_from`]; new nodes are readable from `visible_at`. Returns the last node
    /// and the number of new tokens.
    fn insert_from(
        &mut self,
        u: usize,
        tail: &mut Tail,
        page: usize,
        visible_at: u64,
        tick: u64,
    ) -> (usize, usize) {
        let len = tail.end / page * page;
        tail.end = len.max(tail.base);
        let (pos, node, _) = self.match_from(u, tail, page, None, tick);
        if pos >= len {
            return (node, 0);
        }
        let key = tail.key_from(pos);
        work::add(key.runs() as u64 + 1);
        let first = key.page_key(page);
        let id = self.nodes.len();
        let mut n = Node::new(key, &self.nodes[node], pos, tick, visible_at);
        n.parent = node;
        self.nodes.push(n);
        self.nodes[node].children.insert(first, id);
        self.sync(node);
        self.sync(id);
        (id, len - pos)
    }
}

impl RadixCache {
    /// An empty cache with these parameters.
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
        self.running.retain(|&(t, i, node)| {
            if t > now {
                return true;
            }
            let tree = trees.at_mut(i);
            let n = &mut tree.nodes[node];
            n.pins = n.pins.saturating_sub(1);
            tree.sync(node);
            false
        });
    }

    /// Evicts unlocked leaves, least recently used first, until the tree fits (G5). Ties go
    /// to the model whose name sorts first, then to the older node.
    fn evict(&mut self) {
        let page = self.config.page_size.max(1);
        while self.total_tokens > self.config.capacity_tokens {
            let mut best: Option<(u64, &str, usize, usize)> = None;
            for (i, (name, tree)) in self.trees.iter_mut().enumerate() {
                if let Some((stamp, id)) = tree.oldest_leaf() {
                    if best.is_none_or(|(s, n, b, _)| (stamp, name, id) < (s, n, b)) {
                        best = Some((stamp, name, id, i));
                    }
                }
            }
            let Some((stamp, _, id, i)) = best else {
                break;
            };
            let tree = self.trees.at_mut(i);
            let parent = tree.nodes[id].parent;
            let key = tree.nodes[id].key.page_key(page);
            tree.nodes[parent].children.remove(&key);
            tree.nodes[id].alive = false;
            self.total_tokens -= tree.nodes[id].key.len();
            tree.nodes[id].key = Key::default();
            tree.sync(id);
            // Every touch that reached the leaf passed its parent.
            let p = &mut tree.nodes[parent];
            p.stamp = p.stamp.max(stamp);
            tree.sync(parent);
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
        let mut tail = Tail::new(cursor, base, prompt as usize);
        let (matched, _, blocked) = tree.match_from(u, &mut tail, page, Some(now), self.tick);
        let cap = prompt.saturating_sub(1) as usize / page * page;
        let cached = matched.min(cap) as u64;
        outcome.cached_tokens = cached;
        outcome.write_5m_tokens = (prompt / page as u64 * page as u64).saturating_sub(cached);
        outcome.uncached_input_tokens = prompt - cached - outcome.write_5m_tokens;
        let seen = tree.seen.matches_from(cursor, now, &mut st.auto.seen);
        let cursor = &st.auto.cursor;
        outcome.stop = automatic_stop(
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
        let now = req.sent_at_ms;
        let mut tail = Tail::new(&st.auto.cursor, base, prompt);
        let (mid, added_prompt) = tree.insert_from(u, &mut tail, page, now, tick);
        st.auto.cursor.extend_generated(&mut self.reasoning, req);
        let mut full = st.auto.cursor.total() as usize;
        if !self.config.cache_last_token && full > prompt {
            full -= 1;
        }
        let from = tree.nodes[mid].end();
        let mut tail = Tail::new(&st.auto.cursor, from, full);
        let (last, added_reply) = tree.insert_from(mid, &mut tail, page, completed, tick);
        tree.nodes[last].pins += 1;
        tree.sync(last);
        st.node = last;
        st.on_path = tree.nodes[last].end();
        let stored = full / page * page;
        let cursor = &st.auto.cursor;
        let k = segment_near_end(cursor, stored);
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
        let i = self.trees.position(&req.model).expect("tree exists");
        self.running.push((completed, i, last));
        self.total_tokens += added_prompt + added_reply;
        self.evict();
    }
}
