//! The step loop: the state machine decides each step of the main stream, its handler
//! (`steps`) carries it out, and the decisions join the trace.

use super::names::RowNames;
use super::replayer::{At, Replayer};
use super::steps;
use super::stream::Stream;
use super::{Replay, ReplayEnv, ReplayError};
use crate::cache::CacheModel;
use crate::plan_mode::{MachineConfig, PlanMachine, Target, Trace};
use crate::scenario::Session;
use crate::strategy::Strategy;

/// Replays one scenario under one strategy against one cache model.
pub fn replay(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
) -> Result<Replay, ReplayError> {
    let sc = &session.scenario;
    let machine = PlanMachine::new(MachineConfig {
        initial_mode: sc.initial_mode,
        auto_available: sc.auto_available,
        external_channels: sc.external_channels,
        plan_mode_required: sc.team.as_ref().is_some_and(|t| t.plan_mode_required),
    });
    let out = Replay {
        scenario: sc.name.clone(),
        strategy: strategy.name().to_string(),
        cache: cache.name().to_string(),
        // About a request per step: the rows are large, and growing the list copies them.
        rows: Vec::with_capacity(sc.steps.len()),
        trace: Trace::default(),
        unrendered_calls: Vec::new(),
        notes: Vec::new(),
    };
    let mut r = Replayer {
        session,
        strategy,
        cache,
        env,
        machine,
        names: RowNames::new(&out),
        out,
    };
    let mut main = Stream::new("main", session.tools.clone(), 0);
    main.context = session.context.clone();
    main.conversation = main.context_segments();
    for (i, step) in sc.steps.iter().enumerate() {
        let at = At {
            step: i,
            session,
            agents: Vec::new(),
            label: format!("step{}", i + 1),
        };
        let decisions = steps::run(&mut r, &at, step, &mut main)?;
        r.out.trace.entries.extend(decisions);
    }
    if let Some(target) = r.machine.awaiting() {
        let what = match target {
            Target::Enter => "EnterPlanMode",
            Target::Exit => "ExitPlanMode",
        };
        return Err(ReplayError {
            place: format!("{}: end of steps", session.path.display()),
            message: format!("the session ends while {what} awaits an answer"),
            hint: "add an approve/decline/reject step after the call, or remove the call".into(),
        });
    }
    Ok(r.out)
}
