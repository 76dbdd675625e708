//! Property tests of the reference state machine over random event sequences.

use plancache::plan_mode::{
    AllowedPrompt, CallDecision, CallRequest, MachineConfig, Mode, PlanDoc, PlanMachine,
};
use plancache::scenario::{Access, Target};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Ev {
    Read,
    Write { plan_file: bool },
    Bash(&'static str),
    Enter,
    Exit { with_plan: bool },
    Approve(Target),
    Decline(Target),
    Reject,
    Edit,
    Lead(bool),
    SetMode(Mode),
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Default),
        Just(Mode::AcceptEdits),
        Just(Mode::Plan),
        Just(Mode::Auto),
        Just(Mode::BypassPermissions),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![Just(Target::Enter), Just(Target::Exit)]
}

fn event() -> impl Strategy<Value = Ev> {
    prop_oneof![
        Just(Ev::Read),
        any::<bool>().prop_map(|plan_file| Ev::Write { plan_file }),
        prop_oneof![
            Just("cargo test"),
            Just("rm -rf target"),
            Just("npm install")
        ]
        .prop_map(Ev::Bash),
        Just(Ev::Enter),
        any::<bool>().prop_map(|with_plan| Ev::Exit { with_plan }),
        target().prop_map(Ev::Approve),
        target().prop_map(Ev::Decline),
        Just(Ev::Reject),
        Just(Ev::Edit),
        any::<bool>().prop_map(Ev::Lead),
        mode().prop_map(Ev::SetMode),
    ]
}

fn config() -> impl Strategy<Value = MachineConfig> {
    (mode(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(initial_mode, auto_available, external_channels, plan_mode_required)| MachineConfig {
            initial_mode: if initial_mode == Mode::Plan {
                Mode::Default
            } else {
                initial_mode
            },
            auto_available,
            external_channels,
            plan_mode_required,
        },
    )
}

fn plan() -> PlanDoc {
    PlanDoc {
        tokens: 500,
        text: None,
    }
}

/// An ExitPlanMode call carrying a 500-token plan and the given grants.
fn exit_call(allowed_prompts: &[AllowedPrompt]) -> CallRequest<'_> {
    CallRequest {
        tool: "ExitPlanMode",
        access: Access::Read,
        command: None,
        plan_file: false,
        plan: Some(plan()),
        allowed_prompts,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// No write tool runs in plan mode (the plan file excepted); an approved plan restores the
    /// mode saved on entry (default when that was auto and auto is unavailable); illegal events
    /// are errors, never panics, and leave the mode unchanged.
    #[test]
    fn machine_invariants(cfg in config(), events in prop::collection::vec(event(), 0..60)) {
        let grants = [AllowedPrompt { tool: "Bash".into(), prompt: "run tests".into() }];
        let mut m = PlanMachine::new(cfg.clone());
        let mut saved: Option<Mode> = None;
        for ev in events {
            let before = m.mode();
            let call = |tool: &'static str, access, command, plan_file, plan: Option<PlanDoc>| CallRequest {
                tool, access, command, plan_file, plan, allowed_prompts: &grants[..],
            };
            let result = match &ev {
                Ev::Read => m.call(&call("Read", Access::Read, None, false, None)).map(Some),
                Ev::Write { plan_file } => m
                    .call(&call("Write", Access::Write, None, *plan_file, plan_file.then(plan)))
                    .map(Some),
                Ev::Bash(c) => m.call(&call("Bash", Access::Write, Some(c), false, None)).map(Some),
                Ev::Enter => m.call(&call("EnterPlanMode", Access::Read, None, false, None)).map(Some),
                Ev::Exit { with_plan } => m
                    .call(&call("ExitPlanMode", Access::Read, None, false, with_plan.then(plan)))
                    .map(Some),
                Ev::Approve(t) => m.approve(*t).map(|_| None),
                Ev::Decline(t) => m.decline(*t).map(|_| None),
                Ev::Reject => m.reject().map(|_| None),
                Ev::Edit => m.edit(plan()).map(|_| None),
                Ev::Lead(a) => m.lead_response(*a).map(|_| None),
                Ev::SetMode(to) => m.set_mode(*to).map(|_| None),
            };
            match result {
                Err(_) => prop_assert_eq!(m.mode(), before, "an illegal event changed the mode"),
                Ok(decision) => {
                    if let Some(d) = decision {
                        let is_write = matches!(ev, Ev::Write { .. } | Ev::Bash(_));
                        let plan_file = matches!(ev, Ev::Write { plan_file: true });
                        if before == Mode::Plan && is_write && !plan_file {
                            prop_assert!(!d.executes(), "write ran in plan mode: {:?}", d);
                        }
                        if cfg.external_channels && matches!(ev, Ev::Enter | Ev::Exit { .. }) {
                            prop_assert!(matches!(d, CallDecision::Deny(_)));
                        }
                    }
                    if before != Mode::Plan && m.mode() == Mode::Plan {
                        saved = Some(before);
                    }
                    let approved = matches!(ev, Ev::Approve(Target::Exit) | Ev::Edit | Ev::Lead(true));
                    if before == Mode::Plan && approved {
                        let expected = match saved.take() {
                            Some(Mode::Auto) if !cfg.auto_available => Mode::Default,
                            Some(s) => s,
                            None => Mode::Default,
                        };
                        prop_assert_eq!(m.mode(), expected);
                        prop_assert_eq!(m.pre_plan_mode(), None);
                    }
                    if before == Mode::Plan && m.mode() != Mode::Plan {
                        saved = None;
                    }
                }
            }
        }
    }
}

#[test]
fn more_than_three_rejections_suggest_clarifying() {
    let mut m = PlanMachine::new(MachineConfig::default());
    m.set_mode(Mode::Plan).unwrap();
    let exit = exit_call(&[]);
    let mut suggestions = Vec::new();
    for _ in 0..5 {
        assert_eq!(
            m.call(&exit).unwrap(),
            CallDecision::AwaitApproval(Target::Exit)
        );
        suggestions.push(m.reject().unwrap().suggest_clarify);
    }
    assert_eq!(suggestions, [false, false, false, true, true]);
    assert_eq!(m.rejections(), 5);
    assert_eq!(m.mode(), Mode::Plan);
}

#[test]
fn auto_restores_default_when_auto_is_gone() {
    for (available, expected) in [(true, Mode::Auto), (false, Mode::Default)] {
        let mut m = PlanMachine::new(MachineConfig {
            initial_mode: Mode::Auto,
            auto_available: available,
            ..MachineConfig::default()
        });
        let enter = CallRequest {
            tool: "EnterPlanMode",
            access: Access::Read,
            command: None,
            plan_file: false,
            plan: None,
            allowed_prompts: &[],
        };
        m.call(&enter).unwrap();
        m.approve(Target::Enter).unwrap();
        assert_eq!(m.pre_plan_mode(), Some(Mode::Auto));
        let exit = CallRequest {
            tool: "ExitPlanMode",
            plan: Some(plan()),
            ..enter
        };
        m.call(&exit).unwrap();
        let t = m.approve(Target::Exit).unwrap();
        assert_eq!((t.to, m.mode()), (expected, expected));
    }
}

#[test]
fn granted_prompts_cover_matching_commands_only_after_approval() {
    let grants = [AllowedPrompt {
        tool: "Bash".into(),
        prompt: "run tests".into(),
    }];
    let mut m = PlanMachine::new(MachineConfig::default());
    let bash = |c: &'static str| CallRequest {
        tool: "Bash",
        access: Access::Write,
        command: Some(c),
        plan_file: false,
        plan: None,
        allowed_prompts: &[],
    };
    assert_eq!(m.call(&bash("cargo test")).unwrap(), CallDecision::Ask);
    m.set_mode(Mode::Plan).unwrap();
    assert!(!m.call(&bash("cargo test")).unwrap().executes());
    let exit = exit_call(&grants);
    m.call(&exit).unwrap();
    m.approve(Target::Exit).unwrap();
    assert!(matches!(
        m.call(&bash("cargo test")).unwrap(),
        CallDecision::Allow(_)
    ));
    assert_eq!(m.call(&bash("rm -rf target")).unwrap(), CallDecision::Ask);
}

#[test]
fn team_plans_wait_for_the_lead() {
    let mut m = PlanMachine::new(MachineConfig {
        plan_mode_required: true,
        ..MachineConfig::default()
    });
    m.set_mode(Mode::Plan).unwrap();
    let exit = exit_call(&[]);
    m.call(&exit).unwrap();
    assert!(
        m.approve(Target::Exit).is_err(),
        "the user cannot answer a lead's request"
    );
    let (t, id) = m.lead_response(false).unwrap();
    assert!(t.rejected);
    assert_eq!(id, "plan-1");
    m.call(&exit).unwrap();
    let (t, id) = m.lead_response(true).unwrap();
    assert_eq!((id.as_str(), t.to), ("plan-2", Mode::Default));
    assert!(m.lead_response(true).is_err(), "no request outstanding");
}
