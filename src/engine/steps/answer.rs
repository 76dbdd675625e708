//! The answers to a deferred plan tool: `approve`, `decline`, `reject`, `edit` (the user edits
//! the plan, then approves) and `lead` (a team lead answers a teammate). Each moves the clock by
//! the human's time and appends the tool result that answers the call.

use super::super::replayer::{content_source, ms, At, Replayer};
use super::super::stream::Stream;
use super::super::ReplayError;
use super::{describe, Decisions};
use crate::plan_mode::{PlanDoc, Target, Transition};
use crate::prompt::{Role, TokenSource};
use crate::scenario::{Approval, Content, LeadResponse, PlanText, TextOrContent};

pub(super) fn approve(
    r: &mut Replayer<'_>,
    at: &At,
    a: &Approval,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let t = r.machine.approve(a.target).map_err(|e| at.plan_err(e))?;
    human(r, at, stream)?;
    let clear = a.clear_context && t.plan_approved.is_some();
    let decision = match clear {
        true => format!("{}; context cleared", describe(&t)),
        false => describe(&t),
    };
    let event = format!("approve {}", target_str(a.target));
    let entry = at.entry(&stream.name, event, decision, before, t.to);
    apply(r, stream, at, &t, None, clear);
    Ok(vec![entry])
}

pub(super) fn decline(
    r: &mut Replayer<'_>,
    at: &At,
    target: Target,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let t = r.machine.decline(target).map_err(|e| at.plan_err(e))?;
    human(r, at, stream)?;
    let event = format!("decline {}", target_str(target));
    let entry = at.entry(&stream.name, event, describe(&t), before, t.to);
    stream
        .conversation
        .push(r.session.enter_declined_result.clone());
    Ok(vec![entry])
}

pub(super) fn reject(
    r: &mut Replayer<'_>,
    at: &At,
    feedback: &TextOrContent,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let t = r.machine.reject().map_err(|e| at.plan_err(e))?;
    human(r, at, stream)?;
    let entry = at.entry(
        &stream.name,
        "reject exit".into(),
        describe(&t),
        before,
        t.to,
    );
    let feedback = feedback.clone().into_content();
    apply(r, stream, at, &t, Some(&feedback), false);
    Ok(vec![entry])
}

/// `edit`: the plan as the user edited it (`plan_tokens`, or `plan` text counted), approved.
pub(super) fn edit(
    r: &mut Replayer<'_>,
    at: &At,
    p: &PlanText,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let plan = match (&p.plan_tokens, &p.plan) {
        (Some(n), _) => PlanDoc {
            tokens: *n,
            text: None,
        },
        (None, Some(text)) => PlanDoc {
            tokens: r.session.tokenizer.count_text(text) as u32,
            text: Some(text.clone()),
        },
        (None, None) => return Err(at.unchecked("an edit without a plan".into())),
    };
    let t = r.machine.edit(plan).map_err(|e| at.plan_err(e))?;
    human(r, at, stream)?;
    let event = "edit plan, approve exit".to_string();
    let entry = at.entry(&stream.name, event, describe(&t), before, t.to);
    apply(r, stream, at, &t, None, false);
    Ok(vec![entry])
}

pub(super) fn lead(
    r: &mut Replayer<'_>,
    at: &At,
    resp: &LeadResponse,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let (t, request_id) = r
        .machine
        .lead_response(resp.approve)
        .map_err(|e| at.plan_err(e))?;
    human(r, at, stream)?;
    let verb = if resp.approve { "approve" } else { "reject" };
    let event = format!("lead {verb} {request_id}");
    let entry = at.entry(&stream.name, event, describe(&t), before, t.to);
    let feedback = resp.feedback.clone().map(|f| Content {
        text: Some(f),
        ..Content::default()
    });
    apply(r, stream, at, &t, feedback.as_ref(), false);
    Ok(vec![entry])
}

/// The human's time to answer.
fn human(r: &Replayer<'_>, at: &At, stream: &mut Stream) -> Result<(), ReplayError> {
    stream.advance(ms(r.session.scenario.timing.human), at)
}

fn target_str(t: Target) -> &'static str {
    match t {
        Target::Enter => "enter",
        Target::Exit => "exit",
    }
}

/// Appends the tool result that answers a deferred plan tool, then the strategy's
/// announcements. With `clear`, an approved plan restarts the conversation from the early
/// context blocks and the plan under every strategy (Claude Code's "clear context").
fn apply(
    r: &Replayer<'_>,
    stream: &mut Stream,
    at: &At,
    t: &Transition,
    feedback: Option<&Content>,
    clear: bool,
) {
    let session = r.session;
    let reminders = &session.scenario.reminders;
    let label = format!("{}:result:ExitPlanMode", at.label);
    if t.entered_plan {
        stream
            .conversation
            .push(session.enter_approved_result.clone());
    } else if let Some(plan) = &t.plan_approved {
        let source = match &plan.text {
            Some(text) => TokenSource::Text(format!("User approved the plan.\n\n{text}")),
            None => TokenSource::Count(reminders.plan_approved_header + plan.tokens),
        };
        let approval = session.message(Role::User, &label, source);
        let context = stream.context_segments();
        if clear {
            stream.conversation = context;
            stream.conversation.push(approval);
        } else {
            r.strategy
                .after_approval(session, &mut stream.conversation, &context, approval);
        }
        // The strategy may rewrite the history (a fresh conversation, say).
        stream.touched(0);
        forget_dropped_references(stream);
    } else if t.rejected {
        let source = match feedback.and_then(content_source) {
            Some(TokenSource::Text(text)) => {
                TokenSource::Text(format!("User rejected the plan: {text}"))
            }
            Some(TokenSource::Count(n)) => TokenSource::Count(reminders.plan_rejected_header + n),
            None => TokenSource::Count(reminders.plan_rejected_header),
        };
        stream
            .conversation
            .push(session.message(Role::User, &label, source));
    }
    stream.conversation.extend(r.strategy.announce(session, t));
}

/// A fresh conversation no longer holds the tool references it loaded.
fn forget_dropped_references(stream: &mut Stream) {
    let loaded: Vec<String> = stream.loaded.iter().cloned().collect();
    for name in loaded {
        let still = stream
            .conversation
            .iter()
            .any(|s| s.label == format!("tool-reference:{name}"));
        if !still {
            stream.loaded.remove(&name);
        }
    }
}
