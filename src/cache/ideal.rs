//! The `ideal` cache: the upper bound every real cache is measured against.
//!
//! Unbounded, no minimum, no expiry, no rounding: a request reuses the longest token-level prefix
//! it shares with anything computed before on the same model (earlier prompts and their visible
//! replies). Stored as a trie of segments so a lookup walks segments, not tokens.

use std::collections::HashMap;
use std::sync::Arc;

use super::{BreakReason, CacheModel, CacheOutcome, ReuseStop};
use crate::prompt::{ContentId, Request, Segment};

#[derive(Debug, Default)]
struct Node {
    children: HashMap<ContentId, (Arc<Segment>, usize)>,
}

/// Unbounded token-level longest-common-prefix cache (per model).
#[derive(Debug, Default)]
pub struct IdealCache {
    /// One trie per model; node 0 of each is the root.
    tries: HashMap<String, Vec<Node>>,
}

impl IdealCache {
    fn insert(trie: &mut Vec<Node>, segments: impl Iterator<Item = Arc<Segment>>) {
        let mut node = 0;
        for seg in segments {
            let next = match trie[node].children.get(&seg.id) {
                Some((_, child)) => *child,
                None => {
                    trie.push(Node::default());
                    let child = trie.len() - 1;
                    trie[node].children.insert(seg.id, (seg.clone(), child));
                    child
                }
            };
            node = next;
        }
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
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
        let prompt = req.prompt_tokens();
        let mut outcome = CacheOutcome {
            prompt_tokens: prompt,
            ..CacheOutcome::default()
        };
        let Some(trie) = self.tries.get(&req.model) else {
            let reason = if self.tries.is_empty() {
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
        let mut node = 0;
        let mut cached = 0u64;
        for seg in &req.segments {
            if let Some((_, child)) = trie[node].children.get(&seg.id) {
                cached += seg.len() as u64;
                node = *child;
                continue;
            }
            // Partial reuse inside this segment: the longest token prefix of any cached sibling.
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
            break;
        }
        outcome.cached_tokens = cached;
        outcome.write_5m_tokens = prompt - cached;
        outcome
    }

    fn store(&mut self, req: &Request, _outcome: &CacheOutcome, _visible: u64, _completed: u64) {
        let trie = self
            .tries
            .entry(req.model.clone())
            .or_insert_with(|| vec![Node::default()]);
        Self::insert(trie, req.segments.iter().chain(req.reply.iter()).cloned());
    }
}
