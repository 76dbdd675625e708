//! The segments of a session's main-stream assistant turns, made once per session and shared by
//! its replays.

use std::sync::{Arc, OnceLock};

use super::format::Step;
use crate::prompt::Segment;

/// Each main-stream assistant turn's reply and call results, made by the first replay that asks
/// for them. Every replay of a session (each strategy, each cache model) makes the same ones:
/// the labels and contents come from the scenario alone, and making one anew costs its label
/// formatted and a probe of the tokenizer's memo, which hands back the same segment anyway.
#[derive(Debug, Default)]
pub struct TurnSegments {
    /// The first slot of each step, then the number of slots (`steps + 1` entries): an
    /// assistant turn owns one slot for its reply, then one per call; other steps own none.
    first: Vec<u32>,
    /// The segments, each empty until a replay makes it.
    slots: Vec<OnceLock<Arc<Segment>>>,
}

impl TurnSegments {
    /// Empty slots for the turns of `steps`.
    pub fn new(steps: &[Step]) -> Self {
        let mut first = Vec::with_capacity(steps.len() + 1);
        let mut next = 0u32;
        for step in steps {
            first.push(next);
            if let Step::Assistant(turn) = step {
                let owned = u32::try_from(turn.calls.len() + 1).unwrap_or(u32::MAX);
                next = next.saturating_add(owned);
            }
        }
        first.push(next);
        TurnSegments {
            first,
            slots: (0..next).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Slot `k` of step `step` (0-based; slot 0 is the reply, `1 + j` the result of call `j`),
    /// made by `make` the first time it is asked for. A step without that slot (the steps
    /// changed after the session was made) gets `make`'s segment, kept nowhere.
    pub fn get_or_make(
        &self,
        step: usize,
        k: usize,
        make: impl FnOnce() -> Arc<Segment>,
    ) -> Arc<Segment> {
        let (Some(&from), Some(&to)) = (self.first.get(step), self.first.get(step + 1)) else {
            return make();
        };
        let slot = from as usize + k;
        match self.slots.get(slot) {
            Some(cell) if slot < to as usize => cell.get_or_init(make).clone(),
            _ => make(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{Level, SegmentKind};
    use crate::scenario::{Call, Turn};

    fn segment(id: u64) -> Arc<Segment> {
        Arc::new(Segment {
            id,
            level: Level::Messages,
            kind: SegmentKind::Reminder,
            label: format!("s{id}"),
            tokens: vec![1; 2].into(),
            breakpoint: None,
        })
    }

    fn turn(calls: usize) -> Step {
        Step::Assistant(Turn {
            calls: (0..calls)
                .map(|_| Call {
                    tool: "Read".into(),
                    ..Call::default()
                })
                .collect(),
            ..Turn::default()
        })
    }

    #[test]
    fn each_slot_is_made_once_and_a_missing_one_every_time() {
        let wait = Step::Wait(crate::scenario::WaitDuration(Default::default(), None));
        let steps = [turn(2), wait, turn(0)];
        let memo = TurnSegments::new(&steps);
        assert_eq!(memo.first, [0, 3, 3, 4]);
        let mut made = 0;
        let mut get = |step, k, id| {
            memo.get_or_make(step, k, || {
                made += 1;
                segment(id)
            })
        };
        let reply = get(0, 0, 1);
        assert!(Arc::ptr_eq(&reply, &get(0, 0, 9)), "made once, then shared");
        assert_eq!(get(0, 2, 2).id, 2);
        assert_eq!(get(0, 2, 9).id, 2);
        assert_eq!(get(2, 0, 3).id, 3);
        // Slots a step does not own: step 0 has three, the wait none, step 9 is not there.
        assert_eq!(get(0, 3, 4).id, 4);
        assert_eq!(get(0, 3, 5).id, 5);
        assert_eq!(get(1, 0, 6).id, 6);
        assert_eq!(get(9, 0, 7).id, 7);
        assert_eq!(made, 7);
    }

    /// Replays of one session after the first (its turns' segments shared) equal replays of a
    /// session loaded afresh, under every strategy, on scenarios with subagents (whose turns
    /// are not shared), a compaction and tool changes.
    #[test]
    fn replays_sharing_a_session_equal_replays_of_fresh_ones() {
        use crate::engine::{self, ReplayEnv};
        use crate::scenario::Session;
        let env = ReplayEnv::default();
        let rows = |s: &Session, strategy: &dyn crate::strategy::Strategy| {
            let mut model = crate::cache::build("anthropic", &env.prices).expect("registered");
            engine::replay(s, strategy, model.as_mut(), &env)
                .expect("replays")
                .rows
        };
        for file in [
            "explore-subagents.toml",
            "compact-summary.toml",
            "mcp-tool-churn.toml",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(file);
            let shared = Session::load(&path, None).expect("loads");
            for strategy in crate::strategy::all() {
                let fresh = Session::load(&path, None).expect("loads");
                let (a, b) = (
                    rows(&shared, strategy.as_ref()),
                    rows(&fresh, strategy.as_ref()),
                );
                assert!(!a.is_empty());
                assert_eq!(a, b, "{file} under {}", strategy.name());
            }
        }
    }
}
