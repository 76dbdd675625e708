//! The reference plan-mode state machine.
//!
//! A pure, deterministic model of plan mode as Claude Code designs it: permission modes, the
//! deferred EnterPlanMode / ExitPlanMode transitions with the user's approval, per-call permission
//! checks that keep the toolset unchanged, allowed prompts granted with a plan, plan files and
//! slugs, team approval through mailboxes, the plan-entry policy and plan quality. Strategies only
//! render prompts; this machine decides what happens, so one scenario yields one decision trace
//! under every strategy.

pub mod allowed_prompts;
mod machine;
pub mod mailbox;
mod mode;
pub mod policy;
pub mod quality;
pub mod slug;
pub mod trace;

pub use allowed_prompts::{AllowedPrompt, GrantSet};
pub use machine::{
    AllowReason, CallDecision, CallRequest, DenyReason, MachineConfig, PlanDoc, PlanError,
    PlanMachine, Transition,
};
pub use mailbox::{Mailbox, MailboxReader, TeamApproval};
pub use mode::{Access, Mode, Target};
pub use policy::{PlanPolicy, Suggestion};
pub use quality::{assess as assess_plan, PlanInput, PlanReport};
pub use slug::PlanFiles;
pub use trace::{Trace, TraceEntry};

/// The name of the tool that enters plan mode.
pub const ENTER_PLAN_MODE: &str = "EnterPlanMode";
/// The name of the tool that submits the plan and asks to leave plan mode.
pub const EXIT_PLAN_MODE: &str = "ExitPlanMode";
