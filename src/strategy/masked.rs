//! `masked`: Manus's "mask, don't remove".
//!
//! Manus (blog "Context Engineering for AI Agents: Lessons from Building Manus") keeps the tools
//! list and system prompt byte-identical and enforces the mode by masking token logits at decoding
//! time, so the model cannot even emit a call to a tool the mode forbids. The prompt is the one of
//! `permission-mode` (same tools, system and mode reminders), but a write attempt in plan mode
//! cannot happen: where a scenario scripts one, the reply is kept (the model writes something of
//! that size instead) and no denied result is appended, so there is no denied round trip. `check`
//! lists each such call.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::Mode;
use crate::prompt::Segment;
use crate::scenario::{Session, Tool};

/// The `masked` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct Masked;

impl Strategy for Masked {
    fn name(&self) -> &'static str {
        "masked"
    }

    fn summary(&self) -> &'static str {
        "Manus: tools and system constant, write tools masked at decoding in plan mode; no denied round trip"
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], _mode: Mode) -> Vec<Arc<Segment>> {
        toolset.iter().map(|t| t.segment.clone()).collect()
    }

    fn renders_denied_calls(&self) -> bool {
        false
    }

    fn unrendered_rule(&self) -> &'static str {
        "write tools are masked at decoding in plan mode"
    }
}
