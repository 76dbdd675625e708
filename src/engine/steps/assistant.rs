//! `assistant`: one assistant reply of a stream, i.e. one request (the reply its output), then
//! its tool calls decided in order, each answered by its result (or a denied round trip).

use std::fmt::Write;
use std::sync::Arc;

use super::super::replayer::{ms, At, Replayer};
use super::super::send::Tag;
use super::super::stream::Stream;
use super::super::ReplayError;
use super::Decisions;
use crate::metrics::RequestKind;
use crate::plan_mode::{CallDecision, CallRequest, Mode, PlanDoc, TraceEntry};
use crate::prompt::{Role, Segment, TokenSource};
use crate::scenario::{Call, Tool, Turn};

pub(super) fn run(
    r: &mut Replayer<'_>,
    at: &At,
    turn: &Turn,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    r.machine
        .ensure_idle("an assistant reply")
        .map_err(|e| at.plan_err(e))?;
    load_references(r, turn, stream);
    let session = r.session;
    let reply = turn_segment(r, at, 0, || {
        let source = turn
            .tokens
            .map(TokenSource::Count)
            .or_else(|| turn.text.clone().map(TokenSource::Text))
            .unwrap_or(TokenSource::Count(0));
        session.message(Role::Assistant, &format!("{}:assistant", at.label), source)
    });
    request(r, at, turn, stream, &reply)?;
    if turn.unlogged {
        return Ok(Decisions::new());
    }
    stream.conversation.push(reply);
    // Every call's entry starts from the mode the reply was made in.
    let mode = r.machine.mode();
    let mut decisions = Decisions::with_capacity(turn.calls.len());
    for (j, call) in turn.calls.iter().enumerate() {
        decisions.push(decide(r, at, stream, mode, (j, call))?);
    }
    Ok(decisions)
}

/// Segment `k` of this step's turn (0: the reply; `1 + j`: call `j`'s result), as `make`
/// makes it: on the main stream, made once and shared by the session's replays; inside a
/// subagent (whose labels carry its launch), made here.
fn turn_segment(
    r: &Replayer<'_>,
    at: &At,
    k: usize,
    make: impl FnOnce() -> Arc<Segment>,
) -> Arc<Segment> {
    if at.agents.is_empty() {
        r.session.turns.get_or_make(at.step, k, make)
    } else {
        make()
    }
}

/// Tools loaded on demand: the reference precedes the request whose reply calls the tool.
fn load_references(r: &Replayer<'_>, turn: &Turn, stream: &mut Stream) {
    for call in &turn.calls {
        let Some(tool) = stream.tools().iter().find(|t| t.name == call.tool) else {
            continue;
        };
        if stream.loaded.contains(&tool.name) || !r.strategy.loads_on_demand(r.session, tool) {
            continue;
        }
        let (name, reference) = (tool.name.clone(), r.session.tool_reference(tool));
        stream.loaded.insert(name);
        stream.conversation.push(reference);
    }
}

/// The reply's request, sent. An unlogged request ends with a message of its own (the away
/// summary's instruction, a retried attempt's tail), `tokens` long, that joins no conversation:
/// its entry is never read again, while the prefix it shares is read and refreshed.
fn request(
    r: &mut Replayer<'_>,
    at: &At,
    turn: &Turn,
    stream: &mut Stream,
    reply: &Arc<Segment>,
) -> Result<(), ReplayError> {
    let mode = r.machine.mode();
    let (mut segments, model) = stream.rendered_request(mode, |s| r.head(s, mode));
    let model = match &turn.model {
        Some(m) => {
            r.out.notes.push(format!(
                "{}: request served by {m} (scenario override; the strategy would use {model})",
                at.place()
            ));
            m.clone()
        }
        None => model,
    };
    let tag = match turn.unlogged {
        true => Tag::Unlogged(segments.clone()),
        false => Tag::Row(RequestKind::Reply),
    };
    if turn.unlogged && !reply.is_empty() {
        segments.push(r.session.message(
            Role::User,
            &format!("{}:unlogged", at.label),
            TokenSource::Count(reply.len() as u32),
        ));
    }
    let output = reply.len() as u64 + turn.reasoning_tokens as u64;
    let request = r.request(at, stream, model, segments, vec![reply.clone()], output);
    r.send(request, stream, mode, tag)
}

/// Call `j` (0-based) of the reply, decided by the machine; its result joins the conversation.
fn decide(
    r: &mut Replayer<'_>,
    at: &At,
    stream: &mut Stream,
    mode: Mode,
    (j, call): (usize, &Call),
) -> Result<TraceEntry, ReplayError> {
    let tool = stream
        .tools()
        .iter()
        .find(|t| t.name == call.tool)
        .cloned()
        .ok_or_else(|| {
            at.unchecked(format!(
                "call {} uses tool `{}`, which is not offered here",
                j + 1,
                call.tool
            ))
        })?;
    let decision = r
        .machine
        .call(&CallRequest {
            tool: &call.tool,
            access: tool.access,
            command: call.command.as_deref(),
            plan_file: call.plan_file || plan_path(r, stream, call),
            plan: plan_of(r, stream, call),
            allowed_prompts: &call.allowed_prompts,
        })
        .map_err(|e| at.plan_err(e))?;
    let event = match (&call.command, &call.path) {
        (Some(c), _) => format!("call {} `{c}`", call.tool),
        (None, Some(p)) => format!("call {} {p}", call.tool),
        (None, None) => format!("call {}", call.tool),
    };
    let entry = at.entry(
        &stream.name,
        event,
        decision.to_string(),
        mode,
        r.machine.mode(),
    );
    answer(r, at, stream, j, call, &tool, &decision)?;
    Ok(entry)
}

/// The plan a call writes: a subagent's plan file is its own and never the session's plan.
fn plan_of(r: &Replayer<'_>, stream: &Stream, call: &Call) -> Option<PlanDoc> {
    if stream.agent.is_some() {
        return None;
    }
    call.plan_tokens
        .map(|n| PlanDoc {
            tokens: n,
            text: None,
        })
        .or_else(|| {
            call.plan.as_ref().map(|t| PlanDoc {
                tokens: r.session.tokenizer.count_text(t) as u32,
                text: Some(t.clone()),
            })
        })
}

/// Whether the call's `path` is the stream's plan file.
fn plan_path(r: &Replayer<'_>, stream: &Stream, call: &Call) -> bool {
    let files = &r.session.plan_files;
    call.path.as_deref().is_some_and(|p| {
        let p = std::path::Path::new(p);
        match &stream.agent {
            None => files.is_plan_file(p),
            Some(_) => p == files.agent_plan_path(&stream.name),
        }
    })
}

/// What answers a decided call: its result after the human (when asked) and the tool's time,
/// a denied round trip, or nothing while it awaits approval.
fn answer(
    r: &mut Replayer<'_>,
    at: &At,
    stream: &mut Stream,
    j: usize,
    call: &Call,
    tool: &Tool,
    decision: &CallDecision,
) -> Result<(), ReplayError> {
    let sc = &r.session.scenario;
    match decision {
        CallDecision::Allow(_) | CallDecision::Ask => {
            if *decision == CallDecision::Ask {
                stream.advance(ms(sc.timing.human), at)?;
            }
            let took = call.duration.map(ms).unwrap_or(ms(sc.timing.tool));
            stream.advance(took, at)?;
            let session = r.session;
            let result = turn_segment(r, at, 1 + j, || {
                let source = call
                    .result_tokens
                    .map(TokenSource::Count)
                    .or_else(|| call.result.clone().map(TokenSource::Text))
                    .unwrap_or(TokenSource::Count(0));
                // Sized up front: `format!` would grow the string while writing it.
                let mut label = String::with_capacity(at.label.len() + tool.name.len() + 16);
                let _ = write!(label, "{}:result{}:{}", at.label, j + 1, tool.name);
                session.message(Role::User, &label, source)
            });
            stream.conversation.push(result);
        }
        CallDecision::Deny(_) if r.strategy.renders_denied_calls() => {
            stream.conversation.push(r.session.denied_result.clone());
        }
        CallDecision::Deny(_) => r.out.unrendered_calls.push(format!(
            "{}: call {} {} cannot be made under {} ({}); no denied round trip",
            at.place(),
            j + 1,
            call.tool,
            r.strategy.name(),
            r.strategy.unrendered_rule()
        )),
        CallDecision::AwaitApproval(_) => {}
    }
    Ok(())
}
