//! `plancache validate`: replay real transcripts and compare with the recorded cache counters.

use std::path::PathBuf;

use clap::Args;

use super::common::{cache_config, cache_list, price_table};
use super::CliError;
use crate::engine::ReplayEnv;
use crate::export::write_atomic;
use crate::import::Harness;
use crate::validate::{validate as run_validation, FirstRequest, SharedPrefix, ValidateOptions};

/// Import transcripts, replay them as the harness did, and report the simulator's error against
/// what was billed (per request CSV + Markdown summary).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache validate session.jsonl
  plancache validate tests/fixtures/transcripts/dkimuson_*.jsonl --out validation
  plancache validate session.jsonl --first-request include --shared-prefix none

Writes DIR/validation.csv (one row per request) and DIR/validation.md with --out; prints the
Markdown summary. docs/validation.md explains every figure.")]
pub struct ValidateArgs {
    /// Transcripts (JSONL).
    #[arg(required = true)]
    pub transcripts: Vec<PathBuf>,
    /// Which harness wrote them: claude-code or codex.
    #[arg(long, default_value = "claude-code")]
    pub kind: String,
    /// The strategy the harness used.
    #[arg(long, default_value = "permission-mode")]
    pub strategy: String,
    /// The cache model to replay against.
    #[arg(long, default_value = crate::cache::DEFAULT_CACHE)]
    pub cache: String,
    /// Keep the first request of each stream out of the error figures, or count it.
    #[arg(long, value_enum, default_value = "apart")]
    pub first_request: FirstRequest,
    /// Cache the leading block the first request read from an earlier session before replaying.
    #[arg(long, value_enum, default_value = "recorded")]
    pub shared_prefix: SharedPrefix,
    /// Mispredicted: |Δcache_read| above this share of the prompt.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,
    /// Write validation.csv and validation.md into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A pricing file that adds or replaces models of the bundled table.
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Cache-model parameters (TOML; see docs/cache-models.md). The TTLs are taken from the
    /// transcript whatever the file says.
    #[arg(long)]
    pub cache_config: Option<PathBuf>,
}

pub fn validate(args: ValidateArgs) -> Result<(), CliError> {
    let harness = Harness::parse(&args.kind).map_err(CliError::input)?;
    let cache = cache_list(&args.cache)?;
    if cache.len() != 1 {
        return Err(CliError::input(
            "validate replays against one cache model; e.g. --cache anthropic",
        ));
    }
    if !(0.0..=1.0).contains(&args.tolerance) {
        return Err(CliError::input(format!(
            "--tolerance {} is not a share between 0 and 1; e.g. --tolerance 0.05",
            args.tolerance
        )));
    }
    let env = ReplayEnv {
        prices: price_table(args.pricing.as_deref())?,
        caches: cache_config(args.cache_config.as_deref())?,
        ..ReplayEnv::default()
    };
    let transcripts = args
        .transcripts
        .iter()
        .map(|p| harness.read(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)?;
    let opts = ValidateOptions {
        strategy: args.strategy.clone(),
        cache: cache[0].clone(),
        first_request: args.first_request,
        shared_prefix: args.shared_prefix,
        tolerance: args.tolerance,
        ..ValidateOptions::default()
    };
    let v = run_validation(&transcripts, &opts, &env).map_err(CliError::input)?;
    let md = v.to_markdown();
    print!("{md}");
    if let Some(dir) = &args.out {
        let csv = v.to_csv().map_err(CliError::input)?;
        write_atomic(&dir.join("validation.csv"), &csv).map_err(CliError::input)?;
        write_atomic(&dir.join("validation.md"), md.as_bytes()).map_err(CliError::input)?;
        eprintln!("wrote {}", dir.display());
    }
    Ok(())
}
