//! One handler per step kind. Each takes the step's stream (the main stream, or a subagent's)
//! and returns the decisions the trace records, in order (none for a user message); requests
//! go through the one sender (`super::send`). The loader (`scenario::load`) has checked every
//! step; a handler does not check it again.
//!
//! Adding a step kind: its variant in `scenario::Step`, its check in `scenario::load`, a
//! handler file here and its line in [`run`].

mod agents;
mod answer;
mod assistant;
mod compact;
mod edit;
mod mode;
mod user;
mod wait;

use super::replayer::{At, Replayer};
use super::stream::Stream;
use super::ReplayError;
use crate::plan_mode::{TraceEntry, Transition};
use crate::scenario::Step;

/// What a step decided, in order: the entries it adds to the decision trace.
pub(super) type Decisions = Vec<TraceEntry>;

/// Runs one step on `stream`.
pub(super) fn run(
    r: &mut Replayer<'_>,
    at: &At,
    step: &Step,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    match step {
        Step::User(c) => user::run(r, at, c, stream),
        Step::Wait(d) => wait::run(r, at, d, stream),
        Step::Mode(to) => mode::run(r, at, *to, stream),
        Step::Assistant(turn) => assistant::run(r, at, turn, stream),
        Step::Approve(a) => answer::approve(r, at, a, stream),
        Step::Decline(target) => answer::decline(r, at, *target, stream),
        Step::Reject(feedback) => answer::reject(r, at, feedback, stream),
        Step::Edit(plan) => answer::edit(r, at, plan, stream),
        Step::Lead(resp) => answer::lead(r, at, resp, stream),
        Step::Agents(agents) => agents::run(r, at, agents, stream),
        Step::Compact(c) => compact::run(r, at, c, stream),
        Step::EditContext(block) => edit::context(r, at, block, stream),
        Step::AddTool(def) => edit::add_tool(r, at, def, stream),
        Step::RemoveTool(name) => edit::remove_tool(r, at, name, stream),
        Step::EditSystem(e) => edit::system(r, at, e, stream),
        Step::ReorderTools(names) => edit::reorder_tools(r, at, names, stream),
        Step::ReplaceTool(def) => edit::replace_tool(r, at, def, stream),
    }
}

/// A readable account of a transition for the trace.
fn describe(t: &Transition) -> String {
    let mut parts = Vec::new();
    if t.entered_plan {
        parts.push(format!("enter plan (saved {})", t.from));
    }
    if let Some(plan) = &t.plan_approved {
        parts.push(format!(
            "plan approved ({} tokens), restore {}",
            plan.tokens, t.to
        ));
    }
    if t.plan_edited {
        parts.push("plan edited by user".to_string());
    }
    if t.left_plan {
        parts.push(format!("leave plan for {}", t.to));
    }
    if t.rejected {
        parts.push("plan rejected, stay in plan".to_string());
    }
    if t.suggest_clarify {
        parts.push("suggest AskUserQuestion to clarify first".to_string());
    }
    if parts.is_empty() {
        if t.from == t.to {
            parts.push(format!("no change ({})", t.to));
        } else {
            parts.push(format!("switch to {}", t.to));
        }
    }
    parts.join("; ")
}
