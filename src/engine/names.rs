//! The names a replay's rows repeat, shared by the rows rather than copied into each.

use super::Replay;
use crate::metrics::Name;

/// The names every row of a replay repeats (scenario, strategy, cache, and the few models and
/// streams it sends from), shared by the rows rather than copied into each.
pub(super) struct RowNames {
    /// The scenario's name.
    pub(super) scenario: Name,
    /// The strategy's name.
    pub(super) strategy: Name,
    /// The cache model's registry name.
    pub(super) cache: Name,
    /// The models and streams named so far, in first-use order.
    seen: Vec<Name>,
}

impl RowNames {
    /// The names of `out`'s replay.
    pub(super) fn new(out: &Replay) -> Self {
        RowNames {
            scenario: out.scenario.as_str().into(),
            strategy: out.strategy.as_str().into(),
            cache: out.cache.as_str().into(),
            seen: Vec::new(),
        }
    }

    /// `name` shared: the copy made when it was first named.
    pub(super) fn shared(&mut self, name: &str) -> Name {
        if let Some(s) = self.seen.iter().find(|s| s.as_str() == name) {
            return s.clone();
        }
        let s = Name::from(name);
        self.seen.push(s.clone());
        s
    }
}
