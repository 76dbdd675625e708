//! `agents`: subagents launched in parallel. Each is its own stream starting now, with its own
//! system prompt, tools and model; their steps run on the shared clock in the schedule's event
//! order ([`Agenda`]: earliest first, ties by launch order), so their requests reach the cache
//! in send-time order. The main stream resumes when the last one finishes and receives each
//! agent's result (in launch order) as a tool result.

use super::super::replayer::{At, Replayer};
use super::super::schedule::Agenda;
use super::super::stream::{AgentStream, Stream};
use super::super::ReplayError;
use super::Decisions;
use crate::plan_mode::{CallRequest, Mode, TraceEntry};
use crate::prompt::{Role, SegmentKind, TokenSource};
use crate::scenario::AgentSpec;

pub(super) fn run(
    r: &mut Replayer<'_>,
    at: &At,
    agents: &[AgentSpec],
    main: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let mut decisions = Decisions::new();
    let mut streams = Vec::with_capacity(agents.len());
    for a in agents {
        let (entry, stream) = launch(r, at, a, main, before)?;
        decisions.push(entry);
        streams.push(stream);
    }
    let mut traces = vec![Decisions::new(); agents.len()];
    let mut next = vec![0usize; agents.len()];
    let mut agenda = Agenda::new();
    for (k, s) in streams.iter().enumerate() {
        if !agents[k].steps.is_empty() {
            agenda.due(k, s.clock_ms);
        }
    }
    while let Some(k) = agenda.next_due() {
        let (a, pos) = (&agents[k], next[k]);
        let mut agents = at.agents.clone();
        agents.push((a.name.clone(), pos + 1));
        let inner = At {
            step: at.step,
            session: at.session,
            agents,
            label: format!("{}:{}:{}", at.label, a.name, pos + 1),
        };
        traces[k].extend(super::run(r, &inner, &a.steps[pos], &mut streams[k])?);
        next[k] += 1;
        if next[k] < a.steps.len() {
            agenda.due(k, streams[k].clock_ms);
        }
    }
    main.clock_ms = streams
        .iter()
        .map(|s| s.clock_ms)
        .max()
        .unwrap_or(main.clock_ms);
    for ((a, stream), trace) in agents.iter().zip(&streams).zip(traces) {
        decisions.extend(trace);
        let tokens = a.result_tokens.unwrap_or_else(|| last_reply(stream));
        main.conversation.push(r.session.message(
            Role::User,
            &format!("{}:result:{}:{}", at.label, a.tool, a.name),
            TokenSource::Count(tokens),
        ));
    }
    Ok(decisions)
}

/// The length of the agent's last reply: its result when the scenario gives none.
fn last_reply(stream: &Stream) -> u32 {
    stream
        .conversation
        .iter()
        .rev()
        .find(|s| s.kind == SegmentKind::Message(Role::Assistant))
        .map_or(0, |reply| reply.len() as u32)
}

/// The launching call (decided by the machine: it must execute) and the agent's stream, its
/// prompt in place.
fn launch(
    r: &mut Replayer<'_>,
    at: &At,
    a: &AgentSpec,
    main: &Stream,
    before: Mode,
) -> Result<(TraceEntry, Stream), ReplayError> {
    let offered = |name: &str| {
        main.tools()
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .ok_or_else(|| {
                at.unchecked(format!("agent `{}`: tool `{name}` is not offered", a.name))
            })
    };
    let launcher = offered(&a.tool)?;
    let decision = r
        .machine
        .call(&CallRequest {
            tool: &a.tool,
            access: launcher.access,
            command: None,
            plan_file: false,
            plan: None,
            allowed_prompts: &[],
        })
        .map_err(|e| at.plan_err(e))?;
    let event = format!("call {} ({})", a.tool, a.name);
    let entry = at.entry(
        &main.name,
        event,
        decision.to_string(),
        before,
        r.machine.mode(),
    );
    if !decision.executes() {
        return Err(ReplayError {
            place: at.place(),
            message: format!("agent `{}` cannot be launched: {decision}", a.name),
            hint: "the launching tool must be allowed here; mark it access = \"read\"".into(),
        });
    }
    let tools = a
        .tools
        .iter()
        .map(|n| offered(n))
        .collect::<Result<Vec<_>, _>>()?;
    let mut stream = Stream::new(&a.name, tools, main.clock_ms);
    stream.agent = Some(AgentStream {
        system: system(r, at, a)?,
        model: a.model.clone(),
    });
    let prompt = r
        .session
        .message_content(
            Role::User,
            &format!("{}:{}:prompt", at.label, a.name),
            &a.prompt.clone().into_content(),
        )
        .map_err(|e| at.scenario_err(e))?;
    stream.conversation.push(prompt);
    Ok((entry, stream))
}

/// The agent's system blocks (shared by agents of one type), then its environment block.
fn system(
    r: &Replayer<'_>,
    at: &At,
    a: &AgentSpec,
) -> Result<Vec<std::sync::Arc<crate::prompt::Segment>>, ReplayError> {
    let label = match &a.agent_type {
        Some(t) => format!("agent-type:{t}:system"),
        None => format!("agent:{}:system", a.name),
    };
    let mut system = r
        .session
        .system_blocks(&a.system.to_vec(), &label)
        .map_err(|e| at.scenario_err(e))?;
    if let Some(env) = &a.environment {
        let block = r
            .session
            .environment_block(&format!("{}:{}", at.label, a.name), env)
            .map_err(|e| at.scenario_err(e))?;
        system.push(block);
    }
    Ok(system)
}
