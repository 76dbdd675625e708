//! The `ideal` cache: the upper bound every real cache is measured against.
//!
//! Unbounded, no minimum, no expiry, no rounding: a request reuses the longest token-level prefix
//! it shares with anything computed before on the same model (earlier prompts and what was
//! generated after them: reasoning, then the visible reply; the next prompt repeats only the
//! reply, so after reasoning the shared prefix ends at the previous prompt). Stored as a trie of segments so a lookup walks segments, not tokens; each stream
//! remembers the trie node after every segment it sent, so a request that extends the stream's
//! previous one walks only its new segments (the trie only grows, so those nodes stay valid).

use std::sync::Arc;

use super::common::{self, HashKeyed};
use super::cursor::{ByName, Cursor, Streams};
use super::{BreakReason, CacheModel, CacheOutcome, ReuseStop};
use crate::prompt::{ContentId, Request, Segment};

#[derive(Debug, Default)]
struct Node {
    /// The first child: the content id (a content hash) of the segment leading to it, that
    /// segment and the child's index (most nodes of a conversation's trie have one child, and
    /// a map per node cost an allocation).
    one: Option<(ContentId, Arc<Segment>, usize)>,
    /// The other children by that content id (allocated when a second child arrives).
    more: Option<Box<ChildMap>>,
}

/// Children by the content id of the segment leading to them: (that segment, node index).
type ChildMap = HashKeyed<ContentId, (Arc<Segment>, usize)>;

impl Node {
    /// The child reached by the segment with content id `id`.
    fn child(&self, id: ContentId) -> Option<usize> {
        match &self.one {
            Some((k, _, c)) if *k == id => Some(*c),
            _ => self.more.as_ref()?.get(&id).map(|(_, c)| *c),
        }
    }

    /// Adds (or replaces) the child reached by `seg`.
    fn insert(&mut self, seg: &Arc<Segment>, child: usize) {
        match &mut self.one {
            Some((k, s, c)) if *k == seg.id => (*s, *c) = (seg.clone(), child),
            None if self.more.as_ref().is_none_or(|m| !m.contains_key(&seg.id)) => {
                self.one = Some((seg.id, seg.clone(), child))
            }
            _ => {
                let more = self.more.get_or_insert_with(Default::default);
                more.insert(seg.id, (seg.clone(), child));
            }
        }
    }

    /// The segments leading to the children.
    fn segments(&self) -> impl Iterator<Item = &Arc<Segment>> {
        let more = self.more.iter().flat_map(|m| m.values().map(|(s, _)| s));
        self.one.iter().map(|(_, s, _)| s).chain(more)
    }
}

/// A stream's last request (prompt, then reply once stored) and the trie node after each of its
/// leading segments that the trie holds.
#[derive(Debug, Default)]
struct StreamState {
    /// The stream's last request, segment by segment.
    cursor: Cursor,
    /// `path[i]`: the trie node reached after leading segment `i` (indices into the model's
    /// trie); only as long as the trie holds the cursor's segments.
    path: Vec<usize>,
}

impl StreamState {
    /// Moves to `segments`; keeps the nodes of the unchanged prefix.
    fn advance(&mut self, req: &Request) {
        let keep = self.cursor.advance(req, [0; 3]).keep;
        self.path.truncate(keep);
    }

    /// Walks `trie` from the deepest known node along the cursor's segments while the trie
    /// holds them; returns the index of the first segment it does not hold.
    fn walk(&mut self, trie: &[Node]) -> usize {
        let segs = self.cursor.segments();
        while self.path.len() < segs.len() {
            let node = self.path.last().copied().unwrap_or(0);
            match trie[node].child(segs[self.path.len()].id) {
                Some(child) => self.path.push(child),
                None => break,
            }
        }
        self.path.len()
    }
}

/// Unbounded token-level longest-common-prefix cache (per model).
#[derive(Debug, Default)]
pub struct IdealCache {
    /// One trie per model; node 0 of each is the root.
    tries: ByName<Vec<Node>>,
    /// Each stream's cursor and path.
    streams: Streams<StreamState>,
    /// Hands out the ids of reasoning tokens, unique across requests.
    reasoning: common::ReasoningIds,
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    common::work::add(n as u64 + 1);
    n
}

impl CacheModel for IdealCache {
    fn name(&self) -> &str {
        "ideal"
    }

    /// The upper bound pays nothing extra for writes.
    fn charges_writes(&self) -> bool {
        false
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let st = self.streams.get(&req.stream, &req.model);
        st.advance(req);
        let prompt = st.cursor.total();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let others = self.tries.any_other(&req.model);
        let Some(trie) = self.tries.get_mut(&req.model) else {
            let reason = if !others {
                BreakReason::Cold
            } else {
                BreakReason::ModelChanged
            };
            // Everything is computed and kept for later.
            outcome.write_5m_tokens = prompt;
            outcome.stop = req.segments.first().map(|s| ReuseStop {
                at_token: 0,
                level: s.level,
                segment: s.label.clone(),
                reason,
            });
            return outcome;
        };
        let held = st.walk(trie);
        let mut cached = st.cursor.start(held);
        if let Some(seg) = req.segments.get(held) {
            // Partial reuse inside this segment: the longest token prefix of any cached sibling.
            let node = st.path.last().copied().unwrap_or(0);
            let partial = trie[node]
                .segments()
                .map(|other| common_prefix(&seg.tokens, &other.tokens))
                .max()
                .unwrap_or(0);
            cached += partial as u64;
            outcome.stop = Some(ReuseStop {
                at_token: cached,
                level: seg.level,
                segment: seg.label.clone(),
                reason: BreakReason::PrefixChanged,
            });
        }
        outcome.cached_tokens = cached;
        outcome.write_5m_tokens = prompt - cached;
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, _visible: u64, _completed: u64) {
        let trie = self
            .tries
            .get_or_insert_with(&req.model, || vec![Node::default()]);
        let st = self.streams.get(&req.stream, &req.model);
        st.advance(req);
        st.cursor.extend_generated(&mut self.reasoning, req);
        // Insert what the trie lacks: the prompt and reply after the longest held prefix.
        let held = st.walk(trie);
        let mut node = st.path.last().copied().unwrap_or(0);
        for seg in &st.cursor.segments()[held..] {
            trie.push(Node::default());
            let child = trie.len() - 1;
            trie[node].insert(seg, child);
            st.path.push(child);
            node = child;
        }
    }
}
