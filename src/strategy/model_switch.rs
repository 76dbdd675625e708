//! `model-switch`: plan on one model, implement on another.
//!
//! Claude Code's "Opus in plan mode, Sonnet otherwise" model setting, and Aider's architect /
//! editor pair, send plan-mode requests to `plan_model` and the others to `model`. The prompt
//! bytes are those of `permission-mode`, but caches are per model: the first request after each
//! switch finds nothing cached for its model (or an entry from its last turn, if still alive) and
//! recomputes the whole prompt, tools and system included. (Aider's editor call also starts from
//! an empty history; that variant is not modelled here, `history-reset` shows the history part.)
//! Without a `plan_model` in the scenario this strategy equals `permission-mode`.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::Mode;
use crate::prompt::Segment;
use crate::scenario::{Session, Tool};

/// The `model-switch` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelSwitch;

impl Strategy for ModelSwitch {
    fn name(&self) -> &'static str {
        "model-switch"
    }

    fn summary(&self) -> &'static str {
        "Claude Code opusplan / Aider architect: plan mode runs on plan_model, the rest on model; caches are per model"
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], _mode: Mode) -> Vec<Arc<Segment>> {
        toolset.iter().map(|t| t.segment.clone()).collect()
    }

    fn model(&self, session: &Session, mode: Mode) -> String {
        let sc = &session.scenario;
        match (&sc.plan_model, mode) {
            (Some(plan), Mode::Plan) => plan.clone(),
            _ => sc.model.clone(),
        }
    }

    fn renders_denied_calls(&self) -> bool {
        true
    }
}
