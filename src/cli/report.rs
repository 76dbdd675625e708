//! `plancache report`: charts and the design-review report.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::Args;

use super::common::{cache_list, check_equivalence, load_and_replay_with, replay_env};
use super::params::ParamArgs;
use super::CliError;
use plancache::chart::report;
use plancache::export::OutputDir;

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
        load_and_replay_with(&args.scenarios, &overrides, &strategies, &caches, &env)?;
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
