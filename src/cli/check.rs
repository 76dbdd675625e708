//! `plancache check`: validate scenarios against the reference state machine.

use std::path::PathBuf;

use clap::Args;

use super::common::{load_sessions, scenario_paths};
use super::CliError;
use crate::engine::{self, ReplayEnv};
use crate::strategy;

/// Validate scenarios against the reference plan-mode state machine and the cross-strategy
/// equivalence, printing the decision trace.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache check                         # every scenario in ./scenarios
  plancache check scenarios/auth-plan.toml

Exit codes: 0 valid, 1 an illegal step or a strategy disagreement, 2 unreadable input.")]
pub struct CheckArgs {
    /// Scenario files or directories (default: ./scenarios).
    pub scenarios: Vec<PathBuf>,
    /// Print only failures.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn check(args: CheckArgs) -> Result<(), CliError> {
    let paths = scenario_paths(&args.scenarios)?;
    let sessions = load_sessions(&paths)?;
    let strategies = strategy::all();
    let env = ReplayEnv::default();
    let mut failures = Vec::new();
    for session in &sessions {
        let one = std::slice::from_ref(session);
        if !args.quiet {
            println!("{} ({})", session.scenario.name, session.path.display());
            println!(
                "  plan file: {} (subagents: {})",
                session.plan_files.main_plan_path().display(),
                session.plan_files.agent_plan_path("NAME").display()
            );
        }
        match engine::run(one, &strategies, &["ideal".to_string()], &env) {
            Err(e) => failures.push(e.to_string()),
            Ok(report) => {
                if !args.quiet {
                    if let Some(first) = report.replays.first() {
                        for entry in &first.trace.entries {
                            println!("  {entry}");
                        }
                    }
                    for replay in &report.replays {
                        for note in &replay.unrendered_calls {
                            println!("  note: {note}");
                        }
                    }
                    if let Some(first) = report.replays.first() {
                        for note in &first.notes {
                            println!("  note: {note}");
                        }
                    }
                    println!(
                        "  ok: {} decisions, identical under {}",
                        report.replays.first().map_or(0, |r| r.trace.entries.len()),
                        strategies
                            .iter()
                            .map(|s| s.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                failures.extend(report.violations);
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CliError::failed(failures.join("\n")))
    }
}
