//! `plancache run`: replay scenarios and compare strategies.

use std::path::PathBuf;

use clap::Args;

use super::common::{cache_config, cache_list, load_sessions, price_table, scenario_paths};
use super::CliError;
use crate::engine::{self, ReplayEnv};
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
    let env = ReplayEnv {
        prices: price_table(args.pricing.as_deref())?,
        caches: cache_config(args.cache_config.as_deref())?,
        ..ReplayEnv::default()
    };
    let paths = scenario_paths(&args.scenarios)?;
    let sessions = load_sessions(&paths)?;
    let report = engine::run(&sessions, &strategies, &caches, &env)
        .map_err(|e| CliError::input(e.to_string()))?;
    print!("{}", export::render_table(&report.summaries()));
    if let Some(dir) = &args.out {
        export::write_all(dir, &report, &export::exporters(args.format))
            .map_err(CliError::input)?;
        eprintln!("wrote {}", dir.display());
    }
    if !report.violations.is_empty() {
        return Err(CliError::failed(format!(
            "strategies made different decisions on the same scenario:\n{}",
            report.violations.join("\n")
        )));
    }
    Ok(())
}
