//! The reference plan-mode state machine.
//!
//! A pure, deterministic model of plan mode as Claude Code designs it: permission modes, the
//! deferred EnterPlanMode / ExitPlanMode transitions with the user's approval, per-call permission
//! checks that keep the toolset unchanged, allowed prompts granted with a plan, plan files, and
//! team approval. Strategies only render prompts; this machine decides what happens, so one
//! scenario yields one decision trace under every strategy.

pub mod allowed_prompts;
mod machine;
mod mode;
pub mod trace;

pub use allowed_prompts::AllowedPrompt;
pub use machine::{
    AllowReason, CallDecision, CallRequest, DenyReason, MachineConfig, PlanDoc, PlanError,
    PlanMachine, Transition,
};
pub use mode::Mode;
pub use trace::{Trace, TraceEntry};

/// Names of the two plan tools.
pub const ENTER_PLAN_MODE: &str = "EnterPlanMode";
pub const EXIT_PLAN_MODE: &str = "ExitPlanMode";
