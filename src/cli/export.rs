//! `plancache export`: write a scenario's request sequence for other tools.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::common::{check_models, load_sessions, Sink};
use super::CliError;
use plancache::engine::ReplayEnv;
use plancache::{cache, mooncake};

/// Export a scenario's requests in a format real engines' benchmarks replay.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub format: ExportFormat,
}

#[derive(Debug, Subcommand)]
pub enum ExportFormat {
    /// Mooncake-style JSONL trace: timestamp, input_length, output_length, hash_ids of blocks.
    #[command(after_help = "Examples:
  plancache export mooncake scenarios/auth-plan.toml --strategy permission-mode --out auth.jsonl
  plancache export mooncake scenarios/auth-plan.toml --strategy toolset-swap --block-size 16")]
    Mooncake(MooncakeArgs),
    /// The requests a replay sends (bodies with marks, simulated usage) as a claude-trace JSONL
    /// or HAR 1.2 log, for `explain`, `import requests` and other tools (docs/raw-requests.md).
    #[command(after_help = "Examples:
  plancache export requests scenarios/auth-plan.toml --strategy permission-mode --out auth.jsonl
  plancache export requests scenarios/auth-plan.toml --strategy toolset-swap --format har --out auth.har")]
    Requests(super::explain::ExportRequestsArgs),
}

#[derive(Debug, Args)]
pub struct MooncakeArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The strategy that renders the requests (one; default: permission-mode, as Claude Code's
    /// plan mode).
    #[arg(long, value_name = "STRATEGY", default_value = "permission-mode")]
    pub strategy: String,
    /// Tokens per hashed block.
    #[arg(long, default_value_t = 512)]
    pub block_size: usize,
    /// Output file (default, or `-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
}

pub fn export(args: ExportArgs) -> Result<(), CliError> {
    match args.format {
        ExportFormat::Mooncake(a) => export_mooncake(a),
        ExportFormat::Requests(a) => super::explain::export_requests(a),
    }
}

fn export_mooncake(a: MooncakeArgs) -> Result<(), CliError> {
    if a.block_size == 0 {
        return Err(CliError::input(
            "--block-size must be at least 1; e.g. --block-size 512",
        ));
    }
    if let Some(path) = &a.out {
        let inputs: Vec<PathBuf> = std::iter::once(&a.scenario)
            .chain(&a.pricing.file)
            .cloned()
            .collect();
        super::common::check_file_out("--out", path, &inputs)?;
    }
    let out = match &a.out {
        Some(p) => Sink::parse("--out", p)?,
        None => Sink::Stdout,
    };
    let strategy = super::common::one_strategy(&a.strategy)?;
    let mut env = ReplayEnv {
        prices: a.pricing.table()?,
        ..ReplayEnv::default()
    };
    let sessions = load_sessions(std::slice::from_ref(&a.scenario))?;
    check_models(&sessions, &mut env.prices)?;
    // The cache model only prices the replay; the trace depends on the prompts alone.
    let mut c = cache::build("ideal", &env.prices).map_err(CliError::input)?;
    let (bytes, lines) = mooncake::trace_jsonl(
        &sessions[0],
        strategy.as_ref(),
        c.as_mut(),
        &env,
        a.block_size,
    )
    .map_err(|e| CliError::input(e.to_string()))?;
    out.write(&bytes)?;
    if let Sink::File(p) = &out {
        eprintln!("wrote {} ({lines} requests)", p.display());
    }
    Ok(())
}
