//! `plancache run`: replay scenarios and compare strategies.

use std::path::PathBuf;

use clap::Args;

use super::common::{cache_list, check_equivalence, replay_env, replay_scenarios};
use super::CliError;
use crate::export::{self, Format};
use crate::strategy;

/// Replay scenarios under each strategy and cache model and print a comparison table.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache run                                   # every scenario in ./scenarios
  plancache run scenarios/exercise-3.toml --out out
  plancache run scenarios/auth-plan.toml --strategy permission-mode,toolset-swap --cache ideal --format json --out out")]
pub struct RunArgs {
    /// Scenario files or directories (default: ./scenarios).
    pub scenarios: Vec<PathBuf>,
    /// Strategies, comma-separated, or `all`.
    #[arg(long, default_value = "all")]
    pub strategy: String,
    /// Cache models, comma-separated, or `all`.
    #[arg(long, default_value = crate::cache::DEFAULT_CACHE)]
    pub cache: String,
    /// Write requests.csv and summary.csv (and the --format file) into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Extra output format written next to the CSVs.
    #[arg(long, value_enum, default_value = "csv")]
    pub format: Format,
    /// A pricing file that adds or replaces models of the bundled table.
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// A TOML file of cache-model parameters (one table per model, e.g. [anthropic]
    /// message_ttl = "5m"); see docs/cache-models.md.
    #[arg(long)]
    pub cache_config: Option<PathBuf>,
}

pub fn run(args: RunArgs) -> Result<(), CliError> {
    let strategies = strategy::parse_list(&args.strategy).map_err(CliError::input)?;
    let caches = cache_list(&args.cache)?;
    let env = replay_env(args.pricing.as_deref(), args.cache_config.as_deref())?;
    let report = replay_scenarios(&args.scenarios, &strategies, &caches, &env)?;
    print!("{}", export::render_table(&report.summaries()));
    if let Some(dir) = &args.out {
        export::write_all(dir, &report, &export::exporters(args.format))
            .map_err(CliError::input)?;
        eprintln!("wrote {}", dir.display());
    }
    check_equivalence(&report)
}
