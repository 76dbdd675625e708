//! `compact`: context compaction. With `request`, one summarisation request (the conversation
//! so far and a summary instruction, its output the summary); then the conversation restarts
//! from the summary, or keeps its first whole messages within `keep_tokens`.

use std::sync::Arc;

use super::super::replayer::{At, Replayer};
use super::super::send::Tag;
use super::super::stream::Stream;
use super::super::ReplayError;
use super::Decisions;
use crate::metrics::RequestKind;
use crate::prompt::{Level, Role, Segment, TokenSource};
use crate::scenario::Compact;

pub(super) fn run(
    r: &mut Replayer<'_>,
    at: &At,
    c: &Compact,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    r.machine
        .ensure_idle("a compaction")
        .map_err(|e| at.plan_err(e))?;
    let source = c
        .summary_tokens
        .map(TokenSource::Count)
        .or_else(|| c.summary.clone().map(TokenSource::Text))
        .unwrap_or(TokenSource::Count(0));
    let label = format!("{}:compact-summary", at.label);
    let summary = r.session.message(Role::User, &label, source);
    let size = summary.len();
    if c.request {
        summarise(r, at, stream, c.instruction_tokens, c.tools, &summary)?;
    }
    match c.keep_tokens {
        // Cleared in place: whole messages within `keep` tokens stay.
        Some(keep) => {
            let mut kept = 0u64;
            let n = stream
                .conversation
                .iter()
                .take_while(|seg| {
                    kept += seg.len() as u64;
                    kept <= keep as u64
                })
                .count();
            stream.conversation.truncate(n);
            stream.touched(n);
        }
        None => {
            stream.conversation = stream.context_segments();
            stream.touched(0);
            stream.loaded.clear();
        }
    }
    stream.conversation.push(summary);
    let decision = format!("conversation restarts from a {size}-token summary");
    Ok(vec![at.entry(
        &stream.name,
        "compact".into(),
        decision,
        before,
        before,
    )])
}

/// The summarisation request: the conversation so far (tools and system as the strategy
/// renders them, unless `with_tools` is false) followed by the summary instruction; its output
/// is `summary`.
fn summarise(
    r: &mut Replayer<'_>,
    at: &At,
    stream: &mut Stream,
    instruction_tokens: u32,
    with_tools: bool,
    summary: &Arc<Segment>,
) -> Result<(), ReplayError> {
    let mode = r.machine.mode();
    let (mut head, model) = r.head(stream, mode);
    if !with_tools {
        head.retain(|s| s.level != Level::Tools);
    }
    // The same instruction every time (one content), as a harness sends it.
    stream.conversation.push(r.session.message(
        Role::User,
        "compact-instruction",
        TokenSource::Count(instruction_tokens),
    ));
    let segments = stream.request_segments(head);
    let output = summary.len() as u64;
    let request = r.request(at, stream, model, segments, vec![summary.clone()], output);
    r.send(request, stream, mode, Tag::Row(RequestKind::Compaction))
}
