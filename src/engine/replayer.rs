//! The state of one replay in progress (the machine, the strategy, the cache model and the
//! output so far), where a step sits, and the errors a step reports.

use super::names::RowNames;
use super::{Replay, ReplayEnv, ReplayError};
use crate::cache::CacheModel;
use crate::plan_mode::{Mode, PlanError, PlanMachine, TraceEntry};
use crate::prompt::TokenSource;
use crate::scenario::{Content, ScenarioError, Session};
use crate::strategy::Strategy;

/// One replay in progress.
pub(super) struct Replayer<'a> {
    /// The scenario being replayed, its segments built.
    pub(super) session: &'a Session,
    /// The plan-mode design that renders each request.
    pub(super) strategy: &'a dyn Strategy,
    /// The cache model every request is priced against (shared by all streams).
    pub(super) cache: &'a mut dyn CacheModel,
    /// Prices, latency and cache parameters.
    pub(super) env: &'a ReplayEnv,
    /// The reference state machine that decides every step.
    pub(super) machine: PlanMachine,
    /// The rows, trace and notes so far.
    pub(super) out: Replay,
    /// The names its rows repeat, shared.
    pub(super) names: RowNames,
}

/// Where a step sits, for errors, labels and the trace. Its place (`file: step 7 (line 42)`)
/// names errors and notes only, so it is formatted when one needs it, not per step.
#[derive(Clone)]
pub(super) struct At<'s> {
    /// Main-stream step index (0-based).
    pub(super) step: usize,
    /// The session replayed: its file and step lines make the place.
    pub(super) session: &'s Session,
    /// Inside subagents: each one's name and 1-based step, outermost first (`, agent X step k`).
    pub(super) agents: Vec<(String, usize)>,
    /// Unique label prefix for segments made at this step (`step7` or `step7:explore-1:2`).
    pub(super) label: String,
}

impl At<'_> {
    /// `file: step 7 (line 42)`, plus `, agent X step k` inside a subagent.
    pub(super) fn place(&self) -> String {
        let mut place = format!(
            "{}: {}",
            self.session.path.display(),
            self.session.step_place(self.step)
        );
        for (name, pos) in &self.agents {
            place.push_str(&format!(", agent {name} step {pos}"));
        }
        place
    }

    /// A decision of this step on `stream`, as the trace records it.
    pub(super) fn entry(
        &self,
        stream: &str,
        event: String,
        decision: String,
        before: Mode,
        after: Mode,
    ) -> TraceEntry {
        TraceEntry {
            step: self.step + 1,
            stream: stream.to_string(),
            event,
            decision,
            mode_before: before,
            mode_after: after,
        }
    }

    /// A scenario error (a segment that could not be built) at this step.
    pub(super) fn scenario_err(&self, e: ScenarioError) -> ReplayError {
        ReplayError {
            place: self.place(),
            message: e.message,
            hint: e.hint.unwrap_or_default(),
        }
    }

    /// A step the state machine refuses at this point.
    pub(super) fn plan_err(&self, e: PlanError) -> ReplayError {
        ReplayError {
            place: self.place(),
            message: e.message,
            hint: e.hint,
        }
    }

    /// A name the loader checks (`scenario::load`) that is missing at replay time: a scenario
    /// built in code without the loader's checks.
    pub(super) fn unchecked(&self, message: String) -> ReplayError {
        ReplayError {
            place: self.place(),
            message,
            hint:
                "the scenario loader rejects this (`plancache check`); build scenarios through it"
                    .into(),
        }
    }
}

/// Milliseconds of a duration; `u64::MAX` when it has more (the clock then refuses to advance).
pub(super) fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The tokens of a content given as a count or a text.
pub(super) fn content_source(c: &Content) -> Option<TokenSource> {
    c.tokens
        .map(TokenSource::Count)
        .or_else(|| c.text.clone().map(TokenSource::Text))
}
