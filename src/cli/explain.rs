//! `plancache explain`: why each request of a raw API log read what it read.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::CliError;
use plancache::requests::{self, LogKind};

/// Explain every request of a raw API log (VCR cassette, claude-trace JSONL, HAR, OTel JSON).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache explain .claude-trace/log-2026-12-01-10-00-00.jsonl
  plancache explain capture.har --format markdown
  plancache explain cassette.yaml --json

Per request: the billed read and write, the replay's, the first place the body differs from the
previous request of its stream (a JSON path and offset), the marks that change invalidates and
the cause. See docs/raw-requests.md.")]
pub struct ExplainArgs {
    /// The log file.
    pub log: PathBuf,
    /// The log's kind: vcr, claude-trace, har or otel (default: detected from the name and the
    /// first bytes).
    #[arg(long, value_name = "KIND", value_parser = super::common::kind_parser())]
    pub kind: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ExplainFormat,
    /// Shorthand for `--format json`.
    #[arg(long, short = 'j')]
    pub json: bool,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
}

/// How `explain` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    Table,
    Json,
    Markdown,
}

pub fn explain(args: ExplainArgs) -> Result<(), CliError> {
    let prices = args.pricing.table()?;
    let kind = super::common::log_kind(args.kind.as_deref(), "explain")?;
    let (log, rows) = requests::explain_file(&args.log, kind, &prices)
        .map_err(|e| CliError::input(e.to_string()))?;
    let format = if args.json {
        ExplainFormat::Json
    } else {
        args.format
    };
    let text = match format {
        ExplainFormat::Json => {
            serde_json::to_string_pretty(&rows).map_err(|e| CliError::input(e.to_string()))? + "\n"
        }
        ExplainFormat::Table => requests::view::render(&rows, false),
        ExplainFormat::Markdown => requests::view::render(&rows, true),
    };
    print!("{text}");
    let exact = rows
        .iter()
        .filter(|r| r.fit == requests::build::Fit::Exact)
        .count();
    eprintln!(
        "{}: {} requests in {} stream(s); token lengths: o200k counts scaled to the bill, {exact} of {} exact{}",
        log.file.display(),
        rows.len(),
        log.streams.len(),
        rows.len(),
        if log.timed { "" } else { "; no timestamps in the log: requests placed 1 s apart" }
    );
    Ok(())
}

/// `plancache import requests LOG`: one scenario per stream of a raw API log.
pub fn import_requests(
    log: &std::path::Path,
    kind: Option<LogKind>,
    out: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let exchanges = requests::read_log(log, kind).map_err(|e| CliError::input(e.to_string()))?;
    let built = requests::build_log(log, &exchanges).map_err(|e| CliError::input(e.to_string()))?;
    let name = super::logs::log_name(log);
    let source = log.display().to_string();
    let exact = built
        .requests
        .iter()
        .filter(|r| r.fit == requests::build::Fit::Exact)
        .count();
    eprintln!(
        "{source}: {} requests in {} stream(s); token lengths: o200k counts scaled to the billed usage ({exact} exact)",
        built.requests.len(),
        built.streams.len()
    );
    for s in requests::scenario::scenarios(&built, &name) {
        let text = s.to_toml(&source).map_err(CliError::input)?;
        match out {
            Some(o) => {
                let p = if s.stream == "main" {
                    o.to_path_buf()
                } else {
                    let stem = o.file_stem().and_then(|x| x.to_str()).unwrap_or("scenario");
                    o.with_file_name(format!("{stem}.{}.toml", s.stream))
                };
                plancache::export::write_atomic(&p, text.as_bytes()).map_err(CliError::input)?;
                eprintln!("wrote {}", p.display());
            }
            None if s.stream == "main" => print!("{text}"),
            None => eprintln!("{}: use --out to write it", s.stream),
        }
    }
    Ok(())
}

/// `plancache export requests`.
#[derive(Debug, Args)]
pub struct ExportRequestsArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The strategy that renders the requests (one; default: permission-mode, as Claude Code's
    /// plan mode).
    #[arg(long, value_name = "STRATEGY", default_value = "permission-mode")]
    pub strategy: String,
    /// Log format.
    #[arg(long, value_parser = super::values::parser::<super::values::ExportKind, requests::export::ExportKind>(), default_value = "claude-trace")]
    pub format: requests::export::ExportKind,
    /// The cache model whose marks the bodies carry and whose usage the responses report:
    /// `anthropic-auto` (top-level `cache_control`) or `anthropic-explicit` (the scenario's marks).
    #[arg(long, default_value = "anthropic-auto")]
    pub cache: String,
    /// Output file (default, or `-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
}

pub fn export_requests(a: ExportRequestsArgs) -> Result<(), CliError> {
    use super::common::{check_models, load_sessions, Sink};
    let automatic = match a.cache.as_str() {
        "anthropic-auto" => Some(plancache::cache::CacheConfig::default().anthropic_auto.message_ttl.as_str()),
        "anthropic-explicit" => None,
        other => {
            return Err(CliError::input(format!(
                "--cache {other}: the exported bodies can carry only marks the request itself states; use anthropic-auto or anthropic-explicit"
            )))
        }
    };
    let out = match &a.out {
        Some(p) => Sink::parse("--out", p)?,
        None => Sink::Stdout,
    };
    let strategy = super::common::one_strategy(&a.strategy)?;
    let mut env = plancache::engine::ReplayEnv {
        prices: a.pricing.table()?,
        ..plancache::engine::ReplayEnv::default()
    };
    let sessions = load_sessions(std::slice::from_ref(&a.scenario))?;
    check_models(&sessions, &mut env.prices)?;
    let mut c = plancache::cache::build(&a.cache, &env.prices).map_err(CliError::input)?;
    let (bytes, n) = requests::export::export(
        &sessions[0],
        strategy.as_ref(),
        c.as_mut(),
        &env,
        automatic,
        a.format,
    )
    .map_err(|e| CliError::input(e.to_string()))?;
    out.write(&bytes)?;
    if let Sink::File(p) = &out {
        eprintln!("wrote {} ({n} requests)", p.display());
    }
    Ok(())
}
