//! `deferred-tools`: rarely used tools are stubs, loaded on demand.
//!
//! Newer Claude Code (tool search with `defer_loading`; Anthropic, "Tool use with prompt caching":
//! deferred tools found through tool search are appended inline as `tool_reference` blocks, so
//! the cached prefix does not change) lists rarely used tools, EnterPlanMode and ExitPlanMode
//! among them, as short stubs (`deferred_tools.stub_tokens` each). Before the first request whose
//! reply calls such a tool, a tool reference block carrying its full definition is appended to
//! the conversation. Tools added mid-session are never put into the tools list: a short message
//! announces them (`deferred_tools.announce_tokens`) and they load on demand like the others. So
//! the tools prefix never changes (a removed tool still leaves the list, as in every strategy),
//! and plan mode works as in `permission-mode`. Deferred: tools marked `deferred = true` plus the
//! two plan tools.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::{Mode, ENTER_PLAN_MODE, EXIT_PLAN_MODE};
use crate::prompt::Segment;
use crate::scenario::{Session, Tool};

/// The `deferred-tools` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct DeferredTools;

/// Whether a tool of the initial toolset is listed as a stub.
pub fn is_deferred(tool: &Tool) -> bool {
    tool.deferred || tool.name == ENTER_PLAN_MODE || tool.name == EXIT_PLAN_MODE
}

fn added_mid_session(session: &Session, tool: &Tool) -> bool {
    session.tool(&tool.name).is_none()
}

impl Strategy for DeferredTools {
    fn name(&self) -> &'static str {
        "deferred-tools"
    }

    fn summary(&self) -> &'static str {
        "newer Claude Code: rare tools (plan tools too) are stubs loaded on demand by a tool reference in the conversation; the tools prefix never changes"
    }

    fn tools(&self, session: &Session, toolset: &[Tool], _mode: Mode) -> Vec<Arc<Segment>> {
        toolset
            .iter()
            .filter(|t| !added_mid_session(session, t))
            .map(|t| {
                if is_deferred(t) {
                    session.tool_stub(t)
                } else {
                    t.segment.clone()
                }
            })
            .collect()
    }

    fn renders_denied_calls(&self) -> bool {
        true
    }

    fn loads_on_demand(&self, session: &Session, tool: &Tool) -> bool {
        is_deferred(tool) || added_mid_session(session, tool)
    }

    fn tool_added(&self, session: &Session, tool: &Tool, step: usize) -> Vec<Arc<Segment>> {
        vec![session.tool_announcement(tool, step)]
    }
}
