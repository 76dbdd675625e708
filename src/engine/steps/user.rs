//! `user`: a user message joins the conversation. On the main stream the human types it (the
//! machine must be idle, the clock moves by the typing time); a subagent's prompt-like
//! messages are not typed.

use super::super::replayer::{ms, At, Replayer};
use super::super::stream::Stream;
use super::super::ReplayError;
use super::Decisions;
use crate::prompt::Role;
use crate::scenario::TextOrContent;

pub(super) fn run(
    r: &mut Replayer<'_>,
    at: &At,
    message: &TextOrContent,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    if stream.agent.is_none() {
        r.machine
            .ensure_idle("a user message")
            .map_err(|e| at.plan_err(e))?;
        stream.advance(ms(r.session.scenario.timing.typing), at)?;
    }
    let seg = r
        .session
        .message_content(
            Role::User,
            &format!("{}:user", at.label),
            &message.clone().into_content(),
        )
        .map_err(|e| at.scenario_err(e))?;
    stream.conversation.push(seg);
    Ok(Decisions::new())
}
