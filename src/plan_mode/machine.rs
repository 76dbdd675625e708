//! Modes, transitions and per-call permission checks.

use std::fmt;

use super::allowed_prompts::{AllowedPrompt, GrantSet};
use super::{Access, Target};
use super::{Mode, ENTER_PLAN_MODE, EXIT_PLAN_MODE};

/// Tools that `acceptEdits` allows without asking (file edits, not shell commands).
const EDIT_TOOLS: &[&str] = &["Edit", "Write", "NotebookEdit", "MultiEdit"];

/// Rejections after which the machine suggests clarifying with AskUserQuestion first.
pub const REJECTIONS_BEFORE_CLARIFY: u32 = 3;

/// Settings of one session.
#[derive(Debug, Clone, Default)]
pub struct MachineConfig {
    /// The permission mode the session starts in.
    pub initial_mode: Mode,
    /// Whether `auto` can be restored after plan approval.
    pub auto_available: bool,
    /// The user is not at a terminal: both plan tools are disabled.
    pub external_channels: bool,
    /// A teammate for whom plan mode is required: ExitPlanMode asks the team lead.
    pub plan_mode_required: bool,
}

/// A plan: its size, and its text when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDoc {
    /// The plan's size in tokens.
    pub tokens: u32,
    /// The plan's text, when the scenario or log gives it.
    pub text: Option<String>,
}

/// One tool call as the machine sees it.
#[derive(Debug, Clone)]
pub struct CallRequest<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// Whether the tool reads or writes.
    pub access: Access,
    /// The shell command of a Bash call, matched against granted prompts.
    pub command: Option<&'a str>,
    /// The call writes the session's plan file.
    pub plan_file: bool,
    /// A plan carried by the call (Write of the plan file, or ExitPlanMode).
    pub plan: Option<PlanDoc>,
    /// The allowed prompts an ExitPlanMode call asks the user to grant.
    pub allowed_prompts: &'a [AllowedPrompt],
}

/// Why a call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowReason {
    /// A read-only tool.
    ReadOnly,
    /// A write of the session's plan file, allowed in plan mode.
    PlanFile,
    /// The mode allows it without asking.
    Mode(Mode),
    /// A granted allowed prompt covers it.
    Granted(String),
}

/// Why a call may not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyReason {
    /// A write tool in plan mode.
    PlanMode,
    /// Plan tools are disabled because the user is on an external channel.
    PlanToolsDisabled,
}

/// The machine's answer to a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallDecision {
    /// The call runs without asking, for this reason.
    Allow(AllowReason),
    /// The user is asked and (in a replay) allows it.
    Ask,
    /// The call is refused, for this reason.
    Deny(DenyReason),
    /// EnterPlanMode / ExitPlanMode: waits for the user's (or team lead's) answer.
    AwaitApproval(Target),
}

impl CallDecision {
    /// Whether the call runs (now, or once approved).
    pub fn executes(&self) -> bool {
        matches!(self, CallDecision::Allow(_) | CallDecision::Ask)
    }
}

impl fmt::Display for CallDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallDecision::Allow(AllowReason::ReadOnly) => write!(f, "allow (read-only)"),
            CallDecision::Allow(AllowReason::PlanFile) => write!(f, "allow (plan file)"),
            CallDecision::Allow(AllowReason::Mode(m)) => write!(f, "allow ({m} mode)"),
            CallDecision::Allow(AllowReason::Granted(p)) => {
                write!(f, "allow (granted prompt \"{p}\")")
            }
            CallDecision::Ask => write!(f, "ask user (allowed)"),
            CallDecision::Deny(DenyReason::PlanMode) => write!(f, "deny (plan mode)"),
            CallDecision::Deny(DenyReason::PlanToolsDisabled) => {
                write!(f, "deny (plan tools disabled on external channels)")
            }
            CallDecision::AwaitApproval(Target::Enter) => write!(f, "await approval to enter"),
            CallDecision::AwaitApproval(Target::Exit) => write!(f, "await plan approval"),
        }
    }
}

/// The result of an approval, rejection or mode switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The mode before.
    pub from: Mode,
    /// The mode after.
    pub to: Mode,
    /// Entered plan mode: the plan-mode announcement follows.
    pub entered_plan: bool,
    /// Left plan mode with an approved plan (the plan text is the tool result).
    pub plan_approved: Option<PlanDoc>,
    /// Left plan mode without a plan approval (user switched mode).
    pub left_plan: bool,
    /// The plan was edited by the user before approval.
    pub plan_edited: bool,
    /// A rejection: feedback goes back to the model, plan mode stays.
    pub rejected: bool,
    /// After more than three rejections: suggest clarifying with AskUserQuestion first.
    pub suggest_clarify: bool,
}

impl Transition {
    fn stay(mode: Mode) -> Self {
        Transition {
            from: mode,
            to: mode,
            entered_plan: false,
            plan_approved: None,
            left_plan: false,
            plan_edited: false,
            rejected: false,
            suggest_clarify: false,
        }
    }
}

/// An illegal step: the scenario asks for something the harness cannot do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    /// What the scenario asked that cannot happen.
    pub message: String,
    /// How to write the step instead.
    pub hint: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (hint: {})", self.message, self.hint)
    }
}

impl std::error::Error for PlanError {}

fn illegal(message: impl Into<String>, hint: impl Into<String>) -> PlanError {
    PlanError {
        message: message.into(),
        hint: hint.into(),
    }
}

/// What the machine is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pending {
    /// An EnterPlanMode call.
    Enter,
    /// An ExitPlanMode call offering this plan.
    Exit(PlanDoc),
    /// A teammate's plan approval request in the lead's mailbox.
    Lead {
        /// The request's id (`plan-1`, ...): the lead's answer names it.
        request_id: String,
        /// The plan the teammate offers.
        plan: PlanDoc,
    },
}

/// The state machine of one session.
#[derive(Debug, Clone)]
pub struct PlanMachine {
    /// What the session allows: its initial mode, whether auto mode is offered, whether a
    /// teammate's plan needs the lead's approval.
    config: MachineConfig,
    /// The permission mode now in force.
    mode: Mode,
    /// The mode plan mode was entered from, restored when the plan is approved.
    pre_plan_mode: Option<Mode>,
    /// The plan-tool call awaiting the user's (or the lead's) answer, if any.
    pending: Option<Pending>,
    /// The plan of this plan-mode session: the plan file's content as last written or edited.
    plan: Option<PlanDoc>,
    /// The user edited the pending plan before approving it.
    plan_edited: bool,
    /// Exits rejected since plan mode was entered.
    rejections: u32,
    /// Grants approved with earlier plans, in approval order.
    grants: GrantSet,
    /// The `allowedPrompts` of the pending ExitPlanMode, granted if it is approved.
    requested_grants: Vec<AllowedPrompt>,
    /// The number of the next teammate plan approval request (`plan-N`).
    next_request_id: u32,
}

impl PlanMachine {
    /// A machine in `config.initial_mode` with no plan, grant or pending approval.
    pub fn new(config: MachineConfig) -> Self {
        PlanMachine {
            mode: config.initial_mode,
            config,
            pre_plan_mode: None,
            pending: None,
            plan: None,
            plan_edited: false,
            rejections: 0,
            grants: GrantSet::default(),
            requested_grants: Vec::new(),
            next_request_id: 1,
        }
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The mode plan mode was entered from, while in plan mode.
    pub fn pre_plan_mode(&self) -> Option<Mode> {
        self.pre_plan_mode
    }

    /// How many plans were rejected so far.
    pub fn rejections(&self) -> u32 {
        self.rejections
    }

    /// The latest plan written or submitted, if any.
    pub fn plan(&self) -> Option<&PlanDoc> {
        self.plan.as_ref()
    }

    /// Whether the user edited the plan before approving it.
    pub fn plan_edited(&self) -> bool {
        self.plan_edited
    }

    /// The allowed prompts granted with an approved plan.
    pub fn grants(&self) -> &[AllowedPrompt] {
        self.grants.grants()
    }

    /// Whether an approval (of the user or the team lead) is outstanding.
    pub fn awaiting(&self) -> Option<Target> {
        match self.pending {
            Some(Pending::Enter) => Some(Target::Enter),
            Some(Pending::Exit(_)) | Some(Pending::Lead { .. }) => Some(Target::Exit),
            None => None,
        }
    }

    /// Fails when an approval is outstanding: the conversation cannot go on before it.
    pub fn ensure_idle(&self, what: &str) -> Result<(), PlanError> {
        match &self.pending {
            None => Ok(()),
            Some(Pending::Enter) => Err(illegal(
                format!("{what} while EnterPlanMode awaits the user's answer"),
                "add `approve = \"enter\"` or `decline = \"enter\"` before this step",
            )),
            Some(Pending::Exit(_)) => Err(illegal(
                format!("{what} while the plan awaits the user's answer"),
                "add `approve = \"exit\"`, `reject = \"...\"` or `edit = { ... }` before this step",
            )),
            Some(Pending::Lead { request_id, .. }) => Err(illegal(
                format!("{what} while plan approval request {request_id} awaits the team lead"),
                "add `lead = { approve = true }` before this step",
            )),
        }
    }

    /// Decides one tool call.
    pub fn call(&mut self, call: &CallRequest<'_>) -> Result<CallDecision, PlanError> {
        self.ensure_idle("a tool call")?;
        let is_plan_tool = call.tool == ENTER_PLAN_MODE || call.tool == EXIT_PLAN_MODE;
        if is_plan_tool && self.config.external_channels {
            return Ok(CallDecision::Deny(DenyReason::PlanToolsDisabled));
        }
        if call.tool == ENTER_PLAN_MODE {
            if self.mode == Mode::Plan {
                return Err(illegal(
                    "EnterPlanMode while already in plan mode",
                    "remove the call, or exit plan mode first (ExitPlanMode + approve = \"exit\")",
                ));
            }
            self.pending = Some(Pending::Enter);
            return Ok(CallDecision::AwaitApproval(Target::Enter));
        }
        if call.tool == EXIT_PLAN_MODE {
            if self.mode != Mode::Plan {
                return Err(illegal(
                    format!("ExitPlanMode outside plan mode (mode is {})", self.mode),
                    "enter plan mode first (EnterPlanMode + approve = \"enter\", or mode = \"plan\")",
                ));
            }
            if let Some(plan) = &call.plan {
                self.plan = Some(plan.clone());
            }
            let Some(plan) = self.plan.clone() else {
                return Err(illegal(
                    "ExitPlanMode found no plan: the plan file is empty",
                    "write the plan first (a Write call with plan_file = true and plan_tokens), or give plan_tokens on ExitPlanMode",
                ));
            };
            self.requested_grants = call.allowed_prompts.to_vec();
            if self.config.plan_mode_required {
                let request_id = format!("plan-{}", self.next_request_id);
                self.next_request_id += 1;
                self.pending = Some(Pending::Lead { request_id, plan });
            } else {
                self.pending = Some(Pending::Exit(plan));
            }
            return Ok(CallDecision::AwaitApproval(Target::Exit));
        }
        if call.access == Access::Read {
            return Ok(CallDecision::Allow(AllowReason::ReadOnly));
        }
        if call.plan_file {
            if let Some(plan) = &call.plan {
                self.plan = Some(plan.clone());
            }
            if self.mode == Mode::Plan {
                return Ok(CallDecision::Allow(AllowReason::PlanFile));
            }
        }
        let granted = || {
            let command = call.command.unwrap_or("");
            self.grants
                .covering(call.tool, command)
                .map(|g| g.prompt.clone())
        };
        Ok(match self.mode {
            Mode::Plan => CallDecision::Deny(DenyReason::PlanMode),
            Mode::Auto | Mode::BypassPermissions => {
                CallDecision::Allow(AllowReason::Mode(self.mode))
            }
            Mode::AcceptEdits if EDIT_TOOLS.contains(&call.tool) => {
                CallDecision::Allow(AllowReason::Mode(self.mode))
            }
            Mode::AcceptEdits | Mode::Default => match granted() {
                Some(prompt) => CallDecision::Allow(AllowReason::Granted(prompt)),
                None => CallDecision::Ask,
            },
        })
    }

    fn enter_plan(&mut self) -> Transition {
        let from = self.mode;
        self.pre_plan_mode = Some(from);
        self.mode = Mode::Plan;
        self.rejections = 0;
        self.plan_edited = false;
        Transition {
            entered_plan: true,
            to: Mode::Plan,
            ..Transition::stay(from)
        }
    }

    fn restore_mode(&mut self) -> Mode {
        let saved = self.pre_plan_mode.take().unwrap_or(Mode::Default);
        if saved == Mode::Auto && !self.config.auto_available {
            Mode::Default
        } else {
            saved
        }
    }

    fn exit_approved(&mut self, plan: PlanDoc) -> Transition {
        let from = self.mode;
        self.mode = self.restore_mode();
        let mut grants = self.grants.grants().to_vec();
        grants.append(&mut self.requested_grants);
        self.grants = GrantSet::new(grants);
        Transition {
            to: self.mode,
            plan_approved: Some(plan),
            plan_edited: self.plan_edited,
            ..Transition::stay(from)
        }
    }

    /// The user approves the pending transition.
    pub fn approve(&mut self, target: Target) -> Result<Transition, PlanError> {
        match (target, self.pending.take()) {
            (Target::Enter, Some(Pending::Enter)) => Ok(self.enter_plan()),
            (Target::Exit, Some(Pending::Exit(plan))) => Ok(self.exit_approved(plan)),
            (_, pending @ Some(Pending::Lead { .. })) => {
                self.pending = pending;
                Err(illegal(
                    "the user approves a plan that awaits the team lead",
                    "a teammate's plan is answered with `lead = { approve = true }`",
                ))
            }
            (target, pending) => {
                self.pending = pending;
                Err(self.nothing_pending("approve", target))
            }
        }
    }

    /// The user declines entering plan mode: nothing changes.
    pub fn decline(&mut self, target: Target) -> Result<Transition, PlanError> {
        match (target, self.pending.take()) {
            (Target::Enter, Some(Pending::Enter)) => Ok(Transition::stay(self.mode)),
            (Target::Exit, pending @ Some(Pending::Exit(_))) => {
                self.pending = pending;
                Err(illegal(
                    "`decline = \"exit\"` is not a plan answer",
                    "reject a plan with `reject = \"feedback\"`",
                ))
            }
            (target, pending) => {
                self.pending = pending;
                Err(self.nothing_pending("decline", target))
            }
        }
    }

    /// The user rejects the pending plan: plan mode stays, the rejection is counted.
    pub fn reject(&mut self) -> Result<Transition, PlanError> {
        match self.pending.take() {
            Some(Pending::Exit(_)) => {
                self.rejections += 1;
                self.requested_grants.clear();
                Ok(Transition {
                    rejected: true,
                    suggest_clarify: self.rejections > REJECTIONS_BEFORE_CLARIFY,
                    ..Transition::stay(self.mode)
                })
            }
            pending => {
                self.pending = pending;
                Err(self.nothing_pending("reject", Target::Exit))
            }
        }
    }

    /// The user edits the pending plan (written back to the plan file) and approves it.
    pub fn edit(&mut self, plan: PlanDoc) -> Result<Transition, PlanError> {
        match self.pending.take() {
            Some(Pending::Exit(_)) => {
                self.plan = Some(plan.clone());
                self.plan_edited = true;
                Ok(self.exit_approved(plan))
            }
            pending => {
                self.pending = pending;
                Err(self.nothing_pending("edit", Target::Exit))
            }
        }
    }

    /// The team lead answers the teammate's plan approval request.
    pub fn lead_response(&mut self, approve: bool) -> Result<(Transition, String), PlanError> {
        match self.pending.take() {
            Some(Pending::Lead { request_id, plan }) => {
                if approve {
                    Ok((self.exit_approved(plan), request_id))
                } else {
                    self.rejections += 1;
                    self.requested_grants.clear();
                    Ok((
                        Transition {
                            rejected: true,
                            suggest_clarify: self.rejections > REJECTIONS_BEFORE_CLARIFY,
                            ..Transition::stay(self.mode)
                        },
                        request_id,
                    ))
                }
            }
            pending => {
                self.pending = pending;
                Err(illegal(
                    "a team lead response with no plan approval request outstanding",
                    "only a teammate with plan_mode_required sends requests (team = { plan_mode_required = true }); the response follows its ExitPlanMode",
                ))
            }
        }
    }

    /// The user switches the permission mode directly (e.g. shift+tab).
    pub fn set_mode(&mut self, to: Mode) -> Result<Transition, PlanError> {
        self.ensure_idle("a mode switch")?;
        let from = self.mode;
        if to == from {
            return Ok(Transition::stay(from));
        }
        if to == Mode::Plan {
            return Ok(self.enter_plan());
        }
        if to == Mode::Auto && !self.config.auto_available {
            return Err(illegal(
                "switch to auto mode, which is not available in this session",
                "set auto_available = true, or switch to another mode",
            ));
        }
        self.mode = to;
        let left_plan = from == Mode::Plan;
        if left_plan {
            self.pre_plan_mode = None;
        }
        Ok(Transition {
            to,
            left_plan,
            ..Transition::stay(from)
        })
    }

    fn nothing_pending(&self, verb: &str, target: Target) -> PlanError {
        let what = match target {
            Target::Enter => "EnterPlanMode",
            Target::Exit => "ExitPlanMode",
        };
        illegal(
            format!("{verb} with no pending {what} to answer"),
            format!("an assistant step must call {what} before the user can {verb} it"),
        )
    }
}
