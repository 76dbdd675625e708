//! `system-swap`: Cline's Plan/Act modes.
//!
//! Cline (cline/cline, "Plan & Act" modes) serves plan mode with a plan-specific system prompt and
//! the act mode with the normal one, so every toggle rewrites the system prompt: the tools prefix
//! survives, the system blocks and every message after them are recomputed. The plan prompt is the
//! scenario's `plan_system`, or, when absent, a derived prompt of the same size whose text differs
//! from the first token (the worst case; give `plan_system` blocks as text identical to leading
//! `system` blocks to model a prompt that differs only later). The mode lives in the system
//! prompt, so no reminder message is appended. As an option (`system-swap-tools`), plan mode also
//! drops the write tools from the tools list, as a read-only plan mode does; then a write attempt
//! in plan mode cannot be made (no denied round trip), and the whole prefix changes on a toggle.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::{Mode, Transition};
use crate::prompt::{Level, Segment, SegmentKind, TokenSource, Tokenizer};
use crate::scenario::{Access, Session, Tool};

/// The `system-swap` strategy (`system-swap-tools` with `swap_tools`); the module documentation
/// says what it does to the prompt.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemSwap {
    /// Also drop write tools from the tools list in plan mode.
    pub swap_tools: bool,
}

/// The plan-mode system prompt: the scenario's `plan_system`, or one derived from `system`
/// (each block replaced by a different block of the same size).
pub fn plan_system(session: &Session) -> Vec<Arc<Segment>> {
    if let Some(plan) = &session.plan_system {
        return plan.clone();
    }
    session
        .system
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let label = format!("plan-system(derived)#{}", i + 1);
            let source = TokenSource::Count(s.len() as u32);
            let id = Tokenizer::content_id(&label, &source);
            Arc::new(Segment {
                id,
                level: Level::System,
                kind: SegmentKind::System,
                tokens: session.tokenizer.tokens(id, &source),
                label,
                breakpoint: s.breakpoint,
            })
        })
        .collect()
}

impl Strategy for SystemSwap {
    fn name(&self) -> &'static str {
        if self.swap_tools {
            "system-swap-tools"
        } else {
            "system-swap"
        }
    }

    fn summary(&self) -> &'static str {
        if self.swap_tools {
            "Cline Plan/Act with a read-only toolset: plan mode swaps the system prompt and drops the write tools"
        } else {
            "Cline Plan/Act: plan mode swaps the system prompt for a plan-specific one on every toggle"
        }
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], mode: Mode) -> Vec<Arc<Segment>> {
        toolset
            .iter()
            .filter(|t| !self.swap_tools || mode != Mode::Plan || t.access == Access::Read)
            .map(|t| t.segment.clone())
            .collect()
    }

    fn system(&self, session: &Session, mode: Mode) -> Vec<Arc<Segment>> {
        if mode == Mode::Plan {
            plan_system(session)
        } else {
            session.system.clone()
        }
    }

    fn announce(&self, _session: &Session, _transition: &Transition) -> Vec<Arc<Segment>> {
        Vec::new()
    }

    fn renders_denied_calls(&self) -> bool {
        !self.swap_tools
    }

    fn unrendered_rule(&self) -> &'static str {
        "write tools are dropped from the tools list in plan mode"
    }
}
