//! `plancache check`: validate scenarios against the reference state machine.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::Args;

use super::common::{check_models, context_overruns, load_sessions, noop_notes, scenario_paths};
use super::CliError;
use plancache::cache::{self, anthropic, CacheModel, CacheOutcome};
use plancache::engine::{self, ReplayEnv};
use plancache::plan_mode::{assess_plan, GrantSet, PlanInput, PlanPolicy};
use plancache::prompt::Request;
use plancache::scenario::{Scenario, Session, Step};
use plancache::strategy;

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
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
}

pub fn check(args: CheckArgs) -> Result<(), CliError> {
    let paths = scenario_paths(&args.scenarios)?;
    let sessions = load_sessions(&paths)?;
    let strategies = strategy::all();
    // The unknown-model hint names --pricing and --price: check takes both, as run does.
    let mut env = ReplayEnv {
        prices: args.pricing.table()?,
        ..ReplayEnv::default()
    };
    check_models(&sessions, &mut env.prices)?;
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
                    for line in advice(&session.scenario) {
                        println!("  {line}");
                    }
                    for line in noop_notes(&session.scenario, None, None) {
                        println!("  note: {}", line.replace('\n', "\n  "));
                    }
                    for line in context_overruns(&report, &env.prices) {
                        println!("  warning: {line}");
                    }
                    for line in layout_lines(session, &env) {
                        println!("  warning: {line}");
                    }
                    if let Some(w) = plancache::cache::anthropic::mixed_ttl_warning(
                        session.scenario.cache_marks(),
                        &env.caches.anthropic,
                    ) {
                        println!("  warning: {w}");
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

/// The plan-entry suggestion for the first user message, plan-quality warnings and allowed
/// prompts that no matching rule recognises.
fn advice(scenario: &Scenario) -> Vec<String> {
    let mut out = Vec::new();
    let first_user = scenario.steps.iter().find_map(|s| match s {
        Step::User(c) => Some(c.clone().into_content()),
        _ => None,
    });
    match first_user.and_then(|c| c.text) {
        Some(task) => {
            for policy in [PlanPolicy::Conservative, PlanPolicy::Permissive] {
                let s = policy.evaluate(&task);
                let reasons: Vec<String> = s.reasons.iter().map(|r| r.to_string()).collect();
                out.push(format!(
                    "plan-entry policy {policy:?}: {} ({})",
                    if s.suggest {
                        "suggest plan mode"
                    } else {
                        "no suggestion"
                    },
                    if reasons.is_empty() {
                        "no signal".to_string()
                    } else {
                        reasons.join(", ")
                    }
                ));
            }
        }
        None => out.push(
            "plan-entry policy: first user message has no text (token count only); no suggestion"
                .to_string(),
        ),
    }
    let mut plans = Vec::new();
    for step in &scenario.steps {
        match step {
            Step::Assistant(turn) => {
                for call in &turn.calls {
                    if let Some(text) = &call.plan {
                        plans.push(assess_plan(PlanInput::Text(text)));
                    } else if let Some(n) = call.plan_tokens {
                        plans.push(assess_plan(PlanInput::Tokens(n as u64)));
                    }
                    let grants = GrantSet::new(call.allowed_prompts.clone());
                    for g in grants.unrecognised() {
                        out.push(format!(
                            "warning: allowed prompt \"{}\" for {} matches no command category and covers nothing",
                            g.prompt, g.tool
                        ));
                    }
                }
            }
            Step::Edit(p) => {
                if let Some(text) = &p.plan {
                    plans.push(assess_plan(PlanInput::Text(text)));
                } else if let Some(n) = p.plan_tokens {
                    plans.push(assess_plan(PlanInput::Tokens(n as u64)));
                }
            }
            _ => {}
        }
    }
    for report in plans {
        out.push(format!("plan: {}", report.length_summary()));
        for w in report.warnings() {
            out.push(format!("warning: {w}"));
        }
    }
    out
}

/// Records the requests of a replay on their way to an inner cache model.
struct Recorder {
    inner: Box<dyn CacheModel>,
    requests: Vec<Request>,
}

impl CacheModel for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        self.requests.push(req.clone());
        self.inner.lookup(req)
    }

    fn store(&mut self, req: &Request, outcome: &CacheOutcome, visible: u64, done: u64) {
        self.inner.store(req, outcome, visible, done)
    }
}

/// Lookback and breakpoint-budget warnings of the anthropic layouts (`anthropic`,
/// `anthropic-auto`, `anthropic-explicit`) on the requests `permission-mode` sends; a warning
/// found under several layouts is printed once, naming them.
pub fn layout_lines(session: &Session, env: &ReplayEnv) -> Vec<String> {
    let Ok(inner) = cache::build_with("ideal", &env.prices, &env.caches) else {
        return Vec::new();
    };
    let mut rec = Recorder {
        inner,
        requests: Vec::new(),
    };
    if engine::replay(session, &strategy::PermissionMode, &mut rec, env).is_err() {
        return Vec::new();
    }
    let layouts = [
        ("anthropic", &env.caches.anthropic),
        ("anthropic-auto", &env.caches.anthropic_auto),
        ("anthropic-explicit", &env.caches.anthropic_explicit),
    ];
    let mut found: Vec<(String, Vec<&str>)> = Vec::new();
    for (name, config) in layouts {
        for w in anthropic::layout_warnings(config, &rec.requests) {
            let line = format!(
                "request {} ({}, stream {}): {}",
                w.request + 1,
                session.step_place(w.step),
                w.stream,
                w.message
            );
            match found.iter_mut().find(|(l, _)| *l == line) {
                Some((_, names)) => names.push(name),
                None => found.push((line, vec![name])),
            }
        }
    }
    found
        .into_iter()
        .map(|(line, names)| format!("{} (permission-mode): {line}", names.join(", ")))
        .collect()
}
