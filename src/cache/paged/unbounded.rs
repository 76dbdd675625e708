//! The paged cache of a pool that never evicts (a workload's unbounded twin), kept as hashes.
//!
//! With nothing ever evicted, what a lookup finds depends on one fact per cached hash: the
//! earliest time a block holding it becomes readable. The full model finds a block for a hash
//! at `now` when any of its copies (the oldest, or a younger one) is readable by then; every
//! copy ever allocated is still cached, so that is when the earliest of them is. A hash is
//! "in flight" (cached, not readable yet) when it has any copy at all. Pins, the free list,
//! copies' identities and partial blocks decide only which blocks go first, so an unbounded
//! pool needs none of them: 16 bytes a distinct block instead of a 64-byte block plus its
//! index slot. `tests` replays random workloads through both and compares every outcome.

use super::super::common::HashKeyed;

/// For each model key, the chained hash of every block ever cached and the earliest time one
/// of its copies becomes readable (ms).
#[derive(Debug, Default)]
pub(super) struct Visible {
    /// (model key, hash -> earliest readable time) pairs; models are few, so a scan finds one.
    models: Vec<(u64, HashKeyed<u64, u64>)>,
}

/// What a store caches: its blocks' hashes and when they become readable.
pub(super) struct Stored<'a> {
    /// Model key of the request.
    pub mk: u64,
    /// Hashes of the request's full blocks, in chain order.
    pub hashes: &'a [u64],
    /// Leading blocks known to be readable at `now` (the stream's previous ones): not probed.
    pub known: usize,
    /// Blocks the lookup found: cached by earlier requests (probed, written only if missing).
    pub hit: usize,
    /// Full blocks of the prompt: they are readable from `now`, the generated ones from
    /// `completed`.
    pub prompt_blocks: usize,
    /// The request's send time.
    pub now: u64,
    /// When its reply completed.
    pub completed: u64,
}

impl Visible {
    /// The hashes cached under model key `mk`, if any.
    fn table(&self, mk: u64) -> Option<&HashKeyed<u64, u64>> {
        self.models.iter().find(|(m, _)| *m == mk).map(|(_, t)| t)
    }

    /// The hashes cached under model key `mk` (made empty if there are none yet).
    fn table_mut(&mut self, mk: u64) -> &mut HashKeyed<u64, u64> {
        let i = match self.models.iter().position(|(m, _)| *m == mk) {
            Some(i) => i,
            None => {
                self.models.push((mk, HashKeyed::default()));
                self.models.len() - 1
            }
        };
        &mut self.models[i].1
    }

    /// How many of `hashes`, from `from` on, are readable at `now` one after another (the
    /// lookup's scan, which stops at the first miss), counting `from` itself.
    pub(super) fn matched(&self, mk: u64, hashes: &[u64], from: usize, now: u64) -> usize {
        let Some(t) = self.table(mk) else {
            return from.min(hashes.len());
        };
        let mut m = from;
        while m < hashes.len() && t.get(&hashes[m]).is_some_and(|&v| v <= now) {
            m += 1;
        }
        m
    }

    /// Whether a block was ever cached under (`mk`, `h`), readable yet or not.
    pub(super) fn cached(&self, mk: u64, h: u64) -> bool {
        self.table(mk).is_some_and(|t| t.contains_key(&h))
    }

    /// Caches a store's blocks; returns an upper bound of the times from which each of its
    /// `hashes` is readable.
    pub(super) fn store(&mut self, s: &Stored) -> u64 {
        let t = self.table_mut(s.mk);
        // The known blocks were readable at `now`.
        let mut bound = if s.known > 0 { s.now } else { 0 };
        for (i, &h) in s.hashes.iter().enumerate().skip(s.known) {
            let vis = if i < s.prompt_blocks {
                s.now
            } else {
                s.completed
            };
            let v = t.entry(h).or_insert(vis);
            // A block the lookup found is shared; any other is a new copy.
            if i >= s.hit || *v > s.now {
                *v = (*v).min(vis);
            }
            bound = bound.max(*v);
        }
        bound
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PagedCache, PagedConfig, MAX_BLOCKS};
    use crate::cache::{CacheModel, CacheOutcome};
    use crate::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind};
    use std::sync::Arc;

    /// A small deterministic generator (xorshift64*), so a failing case replays.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
        }
    }

    /// A segment of `len` tokens whose content is its id.
    fn seg(id: u64, len: u64) -> Arc<Segment> {
        Arc::new(Segment {
            id,
            level: Level::Messages,
            kind: SegmentKind::Message(Role::User),
            label: format!("s{id}"),
            tokens: (0..len).map(|i| (id as u32) << 10 | i as u32).collect(),
            breakpoint: None,
        })
    }

    /// One stream of a random workload: its conversation so far.
    struct Conversation {
        name: String,
        model: &'static str,
        history: Vec<Arc<Segment>>,
    }

    /// A random workload of `n` requests on `streams` streams sharing two system prompts and
    /// two models, sent close enough together that many run concurrently (a reply completes
    /// after later requests are sent): (request, visible, completed).
    fn workload(seed: u64, streams: usize, n: usize) -> Vec<(Request, u64, u64)> {
        let mut rng = Rng(seed | 1);
        let systems = [seg(1, 37), seg(2, 21)];
        let mut convs: Vec<Conversation> = (0..streams)
            .map(|i| Conversation {
                name: format!("s{i}"),
                model: if i % 3 == 2 { "n" } else { "m" },
                history: vec![systems[i % 2].clone()],
            })
            .collect();
        let mut next_id = 100;
        let mut at = 0;
        let mut out = Vec::new();
        for index in 0..n {
            let c = &mut convs[rng.below(streams as u64) as usize];
            if rng.below(8) == 0 {
                // A rewind: the conversation goes on from an earlier point.
                let keep = 1 + rng.below(c.history.len() as u64) as usize;
                c.history.truncate(keep);
            }
            // Half the turns follow a script every stream shares (the same prompt and reply at
            // the same place), so equal blocks are cached by several streams at different times.
            let place = c.history.len() as u64;
            let reply: Vec<_> = if rng.below(2) == 0 {
                let id = 10_000 + place * 4 + rng.below(2);
                c.history.push(seg(id, 1 + id % 37));
                vec![seg(id + 100_000, 5 + id % 7)]
            } else {
                c.history.push(seg(next_id, 1 + rng.below(40)));
                (0..rng.below(3))
                    .map(|k| seg(next_id + 1 + k, 5 + k))
                    .collect()
            };
            next_id += 4;
            let visible: u64 = reply.iter().map(|s| s.tokens.len() as u64).sum();
            at += rng.below(400);
            let req = Request {
                index,
                stream: c.name.clone(),
                step: index,
                model: c.model.into(),
                sent_at_ms: at,
                segments: c.history.clone(),
                settings: RequestSettings::default(),
                reply: reply.clone(),
                output_tokens: visible + rng.below(2) * rng.below(30),
            };
            c.history.extend(reply);
            let first = at + rng.below(1500);
            out.push((req, first, first + rng.below(2000)));
        }
        out
    }

    /// Every outcome of a replay of `work` on an unbounded pool kept as `blocks` or as hashes.
    fn replay(work: &[(Request, u64, u64)], block_size: usize, blocks: bool) -> Vec<CacheOutcome> {
        let config = PagedConfig {
            block_size,
            capacity_blocks: MAX_BLOCKS,
        };
        let mut c = PagedCache::with_blocks(config, blocks);
        let mut out = Vec::new();
        for (req, visible, completed) in work {
            let o = c.lookup(req);
            c.store(req, &o, *visible, *completed);
            out.push(o);
        }
        out
    }

    /// An unbounded pool kept as hashes has every outcome of one that keeps its blocks, on
    /// random workloads: several streams and models, shared prefixes, rewinds, replies with and
    /// without reasoning, and requests running concurrently (found blocks not readable yet,
    /// younger copies readable before the oldest).
    #[test]
    fn hashes_only_matches_the_full_pool_on_random_workloads() {
        let mut hits = 0;
        for seed in 0..60u64 {
            let work = workload(seed * 7919 + 1, 1 + seed as usize % 6, 150);
            for bs in [1, 2, 3, 16] {
                let full = replay(&work, bs, true);
                let hashes = replay(&work, bs, false);
                for (i, (a, b)) in full.iter().zip(&hashes).enumerate() {
                    assert_eq!(a, b, "seed {seed}, block size {bs}, request {i}");
                }
                hits += full.iter().filter(|o| o.cached_tokens > 0).count();
            }
        }
        // The workloads do reuse the cache (the comparison is not of empty outcomes).
        assert!(hits > 10_000, "{hits} requests hit");
    }

    /// `new` keeps only hashes for a pool that never evicts, and blocks otherwise.
    #[test]
    fn only_a_pool_that_never_evicts_is_kept_as_hashes() {
        let of = |capacity_blocks| {
            PagedCache::new(PagedConfig {
                block_size: 16,
                capacity_blocks,
            })
        };
        assert!(of(MAX_BLOCKS).hashes_only.is_some());
        assert!(of(usize::MAX).hashes_only.is_some());
        assert!(of(MAX_BLOCKS - 1).hashes_only.is_none());
        assert!(of(32_768).hashes_only.is_none());
    }
}
