//! `plancache report`: charts and the design-review report.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::Args;

use super::common::{
    cache_list, check_equivalence, check_models, load_sessions_with, replay_env, scenario_paths,
};
use super::params::ParamArgs;
use super::CliError;
use plancache::chart::report;
use plancache::engine::{ReplayEnv, RunReport};
use plancache::export::OutputDir;
use plancache::scenario::Session;
use plancache::strategy::Strategy;

/// Render charts (SVG and PNG), report.html and report.md for design reviews.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache report scenarios/auth-plan.toml --out review
  plancache report --cache ideal --strategy permission-mode,toolset-swap --out review

Writes DIR/charts/*.svg and *.png (per scenario and cache model: hit rate, cumulative recomputed
tokens, cost split, TTFT), DIR/report.html (self-contained) and DIR/report.md (for a pull
request), plus DIR/requests.csv and DIR/summary.csv.")]
pub struct ReportArgs {
    /// Scenario files or directories (default: ./scenarios).
    pub scenarios: Vec<PathBuf>,
    /// Strategies, comma-separated, or `all`.
    #[arg(long, default_value = "all")]
    pub strategy: String,
    /// Cache models, comma-separated, or `all`.
    #[arg(long, default_value = plancache::cache::DEFAULT_CACHE)]
    pub cache: String,
    /// Output directory.
    #[arg(long, value_name = "DIR", default_value = "report")]
    pub out: PathBuf,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
    /// Cache model parameters (see `plancache run --help`).
    #[arg(long, value_name = "FILE")]
    pub cache_config: Option<PathBuf>,
    /// Parameters on the scenario files (--model, --ttl, --keepalive, --set).
    #[command(flatten)]
    pub params: ParamArgs,
}

/// Runs `plancache report`: replays the scenarios and writes the charts and reports as one
/// transaction into `--out`.
pub fn report(args: ReportArgs) -> Result<(), CliError> {
    let strategies = super::common::strategies(&args.strategy)?;
    let caches = cache_list(&args.cache)?;
    super::common::check_out_dir(&args.out, "report writes a directory (charts, report.html)")?;
    let mut env = replay_env(&args.pricing, args.cache_config.as_deref())?;
    args.params.apply_env(&mut env);
    let overrides = args.params.overrides();
    let (sessions, mut run) =
        load_and_replay_parallel(&args.scenarios, &overrides, &strategies, &caches, &env)?;
    super::logs::add_as_sent(&args.scenarios, &sessions, &caches, &env, &mut run)?;
    // Written as one transaction: an interrupted or failed run leaves the previous report, and a
    // complete one replaces it, stale charts included.
    let out = OutputDir::begin(&args.out, "report").map_err(CliError::input)?;
    report::write(out.path(), &run, &env.prices, &strategies).map_err(CliError::input)?;
    super::logs::write_report_sections(out.path(), &args.scenarios, &run, &env.prices)?;
    out.commit().map_err(CliError::input)?;
    eprintln!("wrote {}", args.out.display());
    check_equivalence(&run)
}

/// Loads the scenarios and replays them as `common::load_and_replay_with` does, one session per
/// task in parallel: each session's replays (every strategy under every cache model) and its
/// equivalence check depend on that session alone, so `engine::run` on one session at a time,
/// joined in session order, gives the same replays and violations in the same order. On an
/// error the first failing session's error is returned, as the serial loop would.
fn load_and_replay_parallel(
    scenarios: &[PathBuf],
    overrides: &plancache::scenario::params::Overrides,
    strategies: &[Box<dyn Strategy>],
    caches: &[String],
    env: &ReplayEnv,
) -> Result<(Vec<Session>, RunReport), CliError> {
    use rayon::prelude::*;
    let sessions = load_sessions_with(&scenario_paths(scenarios)?, overrides)?;
    let mut env = env.clone();
    check_models(&sessions, &mut env.prices)?;
    let parts: Vec<_> = sessions
        .par_iter()
        .map(|s| plancache::engine::run(std::slice::from_ref(s), strategies, caches, &env))
        .collect();
    let mut run = RunReport::default();
    for part in parts {
        let part = part.map_err(|e| CliError::input(e.to_string()))?;
        run.replays.extend(part.replays);
        run.violations.extend(part.violations);
    }
    Ok((sessions, run))
}
