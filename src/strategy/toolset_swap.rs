//! `toolset-swap`: remove the write tools from the tools list while planning.
//!
//! The tools come first in the prompt, so entering and leaving plan mode changes the very start
//! of the prompt and invalidates the whole cached prefix (tools, system, messages). A write in
//! plan mode cannot even be attempted: the tool is absent. The same reminder messages as
//! `permission-mode` announce the mode, so the tools list is the only difference.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::Mode;
use crate::prompt::Segment;
use crate::scenario::{Access, Session, Tool};

/// The `toolset-swap` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolsetSwap;

impl Strategy for ToolsetSwap {
    fn name(&self) -> &'static str {
        "toolset-swap"
    }

    fn summary(&self) -> &'static str {
        "remove Edit/Write/Bash from the tools list while planning; every switch rewrites the start of the prompt"
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], mode: Mode) -> Vec<Arc<Segment>> {
        toolset
            .iter()
            .filter(|t| mode != Mode::Plan || t.access == Access::Read)
            .map(|t| t.segment.clone())
            .collect()
    }

    fn renders_denied_calls(&self) -> bool {
        false
    }
}
