//! `mode`: the user switches the permission mode (shift+tab); the strategy announces it.

use super::super::replayer::{At, Replayer};
use super::super::stream::Stream;
use super::super::ReplayError;
use super::{describe, Decisions};
use crate::plan_mode::Mode;

pub(super) fn run(
    r: &mut Replayer<'_>,
    at: &At,
    to: Mode,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let before = r.machine.mode();
    let t = r.machine.set_mode(to).map_err(|e| at.plan_err(e))?;
    let entry = at.entry(
        &stream.name,
        format!("mode {to}"),
        describe(&t),
        before,
        t.to,
    );
    stream
        .conversation
        .extend(r.strategy.announce(r.session, &t));
    Ok(vec![entry])
}
