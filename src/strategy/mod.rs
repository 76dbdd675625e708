//! Plan-mode strategies: one file each behind one small trait.
//!
//! A strategy decides only how requests are *rendered*: which tools and system blocks go first,
//! which model serves the request, what is appended when the mode changes, and what the
//! conversation looks like after the plan is approved. What *happens* (modes, permissions,
//! approvals) is decided by the reference state machine, identically for every strategy.

mod deferred_tools;
mod frozen_tools;
mod history_reset;
mod masked;
mod model_switch;
mod permission_mode;
mod system_message;
mod system_swap;
mod toolset_swap;

use std::sync::Arc;

use crate::plan_mode::{Mode, Transition};
use crate::prompt::Segment;
use crate::scenario::{Session, Tool};

pub use deferred_tools::{is_deferred, DeferredTools};
pub use frozen_tools::FrozenTools;
pub use history_reset::HistoryReset;
pub use masked::Masked;
pub use model_switch::ModelSwitch;
pub use permission_mode::PermissionMode;
pub use system_message::SystemMessage;
pub use system_swap::{plan_system, SystemSwap};
pub use toolset_swap::ToolsetSwap;

/// How one harness design renders plan-mode sessions into prompts.
pub trait Strategy: Send + Sync {
    /// Name as given to `--strategy`.
    fn name(&self) -> &'static str;

    /// One line: the harness it represents and what it does to the prompt.
    fn summary(&self) -> &'static str;

    /// Tool definitions offered in `mode`, in prompt order. `toolset` is the stream's toolset in
    /// force (the session's tools, changed by `add_tool` / `remove_tool`, or a subagent's tools).
    fn tools(&self, session: &Session, toolset: &[Tool], mode: Mode) -> Vec<Arc<Segment>>;

    /// System blocks in `mode`.
    fn system(&self, session: &Session, _mode: Mode) -> Vec<Arc<Segment>> {
        session.system.clone()
    }

    /// The model serving requests in `mode`.
    fn model(&self, session: &Session, _mode: Mode) -> String {
        session.scenario.model.clone()
    }

    /// Messages appended to the conversation after a mode change.
    fn announce(&self, session: &Session, transition: &Transition) -> Vec<Arc<Segment>> {
        let mut out = Vec::new();
        if transition.entered_plan {
            out.push(session.plan_enter_reminder.clone());
        }
        if transition.plan_approved.is_some() || transition.left_plan {
            out.push(session.plan_exit_reminder.clone());
        }
        out
    }

    /// Tool definitions of a request, given also the stream's tools at its start (`initial`).
    /// The default ignores `initial`; a strategy that freezes the tools array renders it.
    fn tools_for(
        &self,
        session: &Session,
        _initial: &[Tool],
        toolset: &[Tool],
        mode: Mode,
    ) -> Vec<Arc<Segment>> {
        self.tools(session, toolset, mode)
    }

    /// Whether an `edit_system` step leaves the system prompt as it is and appends the change
    /// to the conversation as a system message (`true`), or edits the system block (`false`).
    fn system_edit_inline(&self) -> bool {
        false
    }

    /// Whether a call denied by the permission layer is made and answered with an error result
    /// (`true`), or cannot be made because the tool is absent or masked (`false`).
    fn renders_denied_calls(&self) -> bool;

    /// Why a denied call cannot be made under this strategy (shown by `check`); only asked when
    /// [`Strategy::renders_denied_calls`] is `false`.
    fn unrendered_rule(&self) -> &'static str {
        "the tool is not offered in plan mode"
    }

    /// Whether `tool` is loaded on demand: before the first request whose reply calls it, a tool
    /// reference block carrying its definition is appended to the conversation.
    fn loads_on_demand(&self, _session: &Session, _tool: &Tool) -> bool {
        false
    }

    /// Messages appended when `tool` becomes available mid-session (`add_tool` at `step`,
    /// 0-based). The default adds nothing: the tool simply joins the tools list.
    fn tool_added(&self, _session: &Session, _tool: &Tool, _step: usize) -> Vec<Arc<Segment>> {
        Vec::new()
    }

    /// Messages appended when `tool`'s definition is re-rendered mid-session (`replace_tool`
    /// at `step`, 0-based). The default adds nothing: the new definition takes the old one's
    /// place in the tools list.
    fn tool_replaced(&self, _session: &Session, _tool: &Tool, _step: usize) -> Vec<Arc<Segment>> {
        Vec::new()
    }

    /// The conversation once the plan is approved; `approval` is the tool result carrying the
    /// plan and `context` the early context blocks in force. The default keeps the history and
    /// appends the result.
    fn after_approval(
        &self,
        _session: &Session,
        conversation: &mut Vec<Arc<Segment>>,
        _context: &[Arc<Segment>],
        approval: Arc<Segment>,
    ) {
        conversation.push(approval);
    }
}

/// Every strategy, in display order (what `--strategy all` runs).
pub fn all() -> Vec<Box<dyn Strategy>> {
    vec![
        Box::new(ToolsetSwap),
        Box::new(PermissionMode),
        Box::new(SystemSwap { swap_tools: false }),
        Box::new(HistoryReset),
        Box::new(ModelSwitch),
        Box::new(DeferredTools),
        Box::new(Masked),
        Box::new(SystemMessage),
        Box::new(FrozenTools),
    ]
}

/// Variants that `--strategy` accepts by name but `all` does not run.
pub fn variants() -> Vec<Box<dyn Strategy>> {
    vec![Box::new(SystemSwap { swap_tools: true })]
}

/// The names `--strategy` accepts.
pub fn names() -> Vec<&'static str> {
    all()
        .iter()
        .chain(variants().iter())
        .map(|s| s.name())
        .collect()
}

/// A `--strategy` list that names no strategy or an unknown one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategyError {
    /// A name no strategy has.
    #[error("unknown strategy `{name}`; known strategies: {}, or `all`", names().join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// An empty list.
    #[error("no strategy given; e.g. --strategy permission-mode,toolset-swap")]
    Empty,
}

/// Builds strategies from a comma-separated list (`all` for every one).
pub fn parse_list(spec: &str) -> Result<Vec<Box<dyn Strategy>>, StrategyError> {
    let mut out: Vec<Box<dyn Strategy>> = Vec::new();
    for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name == "all" {
            return Ok(all());
        }
        match all()
            .into_iter()
            .chain(variants())
            .find(|s| s.name() == name)
        {
            Some(s) => {
                if !out.iter().any(|o| o.name() == name) {
                    out.push(s)
                }
            }
            None => {
                return Err(StrategyError::Unknown {
                    name: name.to_string(),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(StrategyError::Empty);
    }
    Ok(out)
}

/// The first strategy of a comma-separated list (`validate` and `account` replay one); the
/// list's errors as [`parse_list`]'s.
pub fn parse_first(spec: &str) -> Result<Box<dyn Strategy>, StrategyError> {
    let mut list = parse_list(spec)?;
    // `parse_list` returns at least one strategy or `Empty`.
    Ok(list.swap_remove(0))
}
