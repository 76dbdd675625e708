//! `permission-mode`: Claude Code's design.
//!
//! Tools and system prompt stay byte-identical in every mode; a permission layer denies write
//! tools in plan mode (the denied call's error result is appended), and a short reminder message
//! announces entering and leaving plan mode. The cached prefix survives every mode switch.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::Mode;
use crate::prompt::Segment;
use crate::scenario::{Session, Tool};

/// The `permission-mode` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct PermissionMode;

impl Strategy for PermissionMode {
    fn name(&self) -> &'static str {
        "permission-mode"
    }

    fn summary(&self) -> &'static str {
        "Claude Code: tools and system constant; a permission layer denies writes in plan mode; a reminder message announces the mode"
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], _mode: Mode) -> Vec<Arc<Segment>> {
        toolset.iter().map(|t| t.segment.clone()).collect()
    }

    fn renders_denied_calls(&self) -> bool {
        true
    }
}
