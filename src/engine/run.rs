//! Replaying many sessions under many strategies and cache models, and the cross-strategy
//! equivalence check.

use serde::Serialize;

use super::replay::replay;
use super::{Replay, ReplayEnv, ReplayError};
use crate::cache;
use crate::metrics::{RequestRow, SummaryRow};
use crate::plan_mode::{Trace, TraceEntry};
use crate::scenario::Session;
use crate::strategy::Strategy;

/// Every replay of a run, plus the cross-strategy equivalence verdicts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunReport {
    /// One replay per scenario x strategy x cache model: by scenario, then strategy, then cache.
    pub replays: Vec<Replay>,
    /// Per scenario: differences between strategies' decision traces (empty when equivalent).
    pub violations: Vec<String>,
}

impl RunReport {
    /// Every request row of every replay, in replay order.
    pub fn rows(&self) -> impl Iterator<Item = &RequestRow> {
        self.replays.iter().flat_map(|r| r.rows.iter())
    }
    /// One summary row per replay, in replay order.
    pub fn summaries(&self) -> Vec<SummaryRow> {
        self.replays.iter().map(Replay::summary).collect()
    }
}

/// Replays every session under every strategy and cache model, and checks that all strategies
/// made the same decisions.
pub fn run(
    sessions: &[Session],
    strategies: &[Box<dyn Strategy>],
    caches: &[String],
    env: &ReplayEnv,
) -> Result<RunReport, ReplayError> {
    let mut report = RunReport::default();
    for session in sessions {
        let mut first: Option<(String, Trace)> = None;
        for strategy in strategies {
            for cache_name in caches {
                let mut cache =
                    cache::build_with(cache_name, &env.prices, &env.caches).map_err(|e| {
                        ReplayError {
                            place: "--cache".into(),
                            message: e.to_string(),
                            hint: "see `plancache run --help`".into(),
                        }
                    })?;
                let replay = replay(session, strategy.as_ref(), cache.as_mut(), env)?;
                match &first {
                    None => first = Some((strategy.name().to_string(), replay.trace.clone())),
                    Some((name, trace)) => {
                        if let Some(diff) = equivalence_violation(
                            &session.scenario.name,
                            name,
                            trace,
                            strategy.name(),
                            &replay.trace,
                        ) {
                            report.violations.push(diff);
                        }
                    }
                }
                report.replays.push(replay);
            }
        }
    }
    Ok(report)
}

/// Describes the first difference between two strategies' traces, if any.
pub fn equivalence_violation(
    scenario: &str,
    a_name: &str,
    a: &Trace,
    b_name: &str,
    b: &Trace,
) -> Option<String> {
    let (i, x, y) = a.first_difference(b)?;
    let show = |e: Option<&TraceEntry>| e.map_or("(nothing)".to_string(), |e| e.to_string());
    Some(format!(
        "{scenario}: decision {} differs between {a_name} and {b_name}:\n  {a_name}: {}\n  {b_name}: {}",
        i + 1,
        show(x),
        show(y)
    ))
}
