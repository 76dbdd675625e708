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
    /// Child nodes by the content id (a content hash) of the segment leading to them.
    children: HashKeyed<ContentId, (Arc<Segment>, usize)>,
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
            match trie[node].children.get(&segs[self.path.len()].id) {
                Some((_, child)) => self.path.push(*child),
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
                .children
                .values()
                .map(|(other, _)| common_prefix(&seg.tokens, &other.tokens))
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
        st.cursor.extend(&self.reasoning.generated(req));
        // Insert what the trie lacks: the prompt and reply after the longest held prefix.
        let held = st.walk(trie);
        let mut node = st.path.last().copied().unwrap_or(0);
        for seg in &st.cursor.segments()[held..] {
            trie.push(Node::default());
            let child = trie.len() - 1;
            trie[node].children.insert(seg.id, (seg.clone(), child));
            st.path.push(child);
            node = child;
        }
    }
}
