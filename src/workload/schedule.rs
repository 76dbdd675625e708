//! The shared clock, written against the API of `crate::engine::schedule` (the lead's module,
//! not yet on this branch): `Timed`, `Schedule::new`, `push`, `run`. When that module is merged
//! this file goes and `workload` uses `crate::engine::schedule` instead; nothing else changes.

use crate::cache::{CacheModel, CacheOutcome};
use crate::prompt::Request;

/// One request placed on the shared clock.
#[derive(Debug, Clone)]
pub struct Timed {
    /// The stream it belongs to (the caller's index).
    pub stream: usize,
    /// The request as the cache sees it.
    pub request: Request,
    /// When it is sent: its lookup time (ms on the schedule's clock).
    pub sent_ms: u64,
    /// When its response begins: its entries become readable to later requests.
    pub visible_ms: u64,
    /// When its response is complete.
    pub finished_ms: u64,
}

/// Requests of many streams, replayed in time order against one cache.
#[derive(Debug, Default)]
pub struct Schedule {
    /// Every request pushed, in push order (outcomes come back in this order).
    entries: Vec<Timed>,
}

impl Schedule {
    pub fn new() -> Self {
        Schedule::default()
    }

    /// Adds a request; returns its index in the outcomes of [`Schedule::run`].
    pub fn push(&mut self, t: Timed) -> usize {
        self.entries.push(t);
        self.entries.len() - 1
    }

    /// Replays in (send time, stream, push order) order: each request is looked up when sent
    /// and stored with its visible and finished times. Outcomes by push index.
    pub fn run(self, cache: &mut dyn CacheModel) -> Vec<CacheOutcome> {
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_by_key(|&i| (self.entries[i].sent_ms, self.entries[i].stream, i));
        let mut outcomes = vec![CacheOutcome::default(); self.entries.len()];
        for i in order {
            let t = &self.entries[i];
            let outcome = cache.lookup(&t.request);
            cache.store(&t.request, &outcome, t.visible_ms, t.finished_ms);
            outcomes[i] = outcome;
        }
        outcomes
    }
}
