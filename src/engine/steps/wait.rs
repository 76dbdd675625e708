//! `wait`: time passes on the stream's clock; with `keepalive`, the harness re-sends the
//! stream's last request at that interval meanwhile (a ping each, priced as its own kind).

use super::super::replayer::{ms, At, Replayer};
use super::super::send::Tag;
use super::super::stream::{advance, Stream};
use super::super::ReplayError;
use super::Decisions;
use crate::metrics::RequestKind;
use crate::scenario::WaitDuration;

pub(super) fn run(
    r: &mut Replayer<'_>,
    at: &At,
    d: &WaitDuration,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let end = advance(stream.clock_ms, ms(d.0), || at.place())?;
    if let Some(every) = d.keepalive() {
        keepalive(r, at, stream, end, ms(every))?;
    }
    stream.clock_ms = end;
    let decision = match d.keepalive() {
        Some(k) => format!("keepalive every {}", humantime::format_duration(k)),
        None => "-".into(),
    };
    let event = format!("wait {}", humantime::format_duration(d.0));
    Ok(vec![at.entry(
        &stream.name,
        event,
        decision,
        before,
        before,
    )])
}

/// Keep-alive pings during a wait of `stream` that ends at `end_ms`: whenever `every_ms`
/// has passed since the stream's last request or ping was sent (at the wait's start if
/// that moment has already passed), the harness re-sends the stream's last request
/// unchanged (same segments, same model) with `max_tokens` = the scenario's
/// `keepalive_max_tokens` (1, or 0 for a pre-warm that generates nothing). Each ping is a
/// priced request of kind `keepalive` (that many output tokens); its reply is discarded, and
/// the human's clock is not moved. A stream that has sent nothing since it started or was
/// compacted has nothing to keep warm.
fn keepalive(
    r: &mut Replayer<'_>,
    at: &At,
    stream: &mut Stream,
    end_ms: u64,
    every_ms: u64,
) -> Result<(), ReplayError> {
    let Some(model) = stream.sent_model.clone() else {
        return Ok(());
    };
    let every_ms = every_ms.max(1);
    let resume_at = stream.clock_ms;
    let mut due = stream
        .last_sent_at_ms
        .saturating_add(every_ms)
        .max(stream.clock_ms);
    let output = u64::from(r.session.scenario.keepalive_max_tokens);
    while due < end_ms {
        let segments = stream.take_sent();
        let mut request = r.request(at, stream, model.clone(), segments, Vec::new(), output);
        request.sent_at_ms = due;
        let mode = r.machine.mode();
        r.send(request, stream, mode, Tag::Row(RequestKind::Keepalive))?;
        due = due.saturating_add(every_ms);
    }
    stream.clock_ms = resume_at;
    Ok(())
}
