//! `plancache account`: every session of an account, added up, with the what-if.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::common::{cache_config, cache_list, price_table};
use super::CliError;
use crate::account::{self, whatif, AccountOptions, Sharing};
use crate::engine::ReplayEnv;
use crate::export::{write_atomic, OutputDir};
use crate::import::discover;

/// Replay every session under a Claude Code projects folder (and/or a Codex sessions folder) on
/// one account timeline: cost, tokens, hit rate and breaks by day, project and model, billed
/// beside predicted, and what the same sessions would cost under other strategies, TTLs and
/// keep-alives.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache account                                   # ~/.claude/projects and ~/.codex/sessions
  plancache account ~/.claude/projects --out account
  plancache account DIR --strategies permission-mode,toolset-swap --ttl 5m,1h --keepalive off,4m30s
  plancache account DIR --shared-prefix none          # every session cold: sums of lone replays

Writes DIR/account.md, account.html, account.csv (day x project x model), sessions.csv and
cost-by-day.svg/.png
with --out; prints the Markdown report. docs/account.md explains every figure.")]
pub struct AccountArgs {
    /// Folders to scan (default: ~/.claude/projects and ~/.codex/sessions, those that exist).
    pub dirs: Vec<PathBuf>,
    /// Write the report files into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The strategy the harness ran.
    #[arg(long, default_value = "permission-mode")]
    pub strategy: String,
    /// Cache model for Claude Code sessions (Codex sessions use `openai`).
    #[arg(long, default_value = crate::cache::DEFAULT_CACHE)]
    pub cache: String,
    /// How sessions share the account's leading tools/system block.
    #[arg(long, value_enum, default_value = "timeline")]
    pub shared_prefix: Sharing,
    /// What-if strategies (comma-separated, or `all`); `none` skips the what-if.
    #[arg(long, default_value = "all")]
    pub strategies: String,
    /// What-if TTLs.
    #[arg(long, default_value = "5m,1h")]
    pub ttl: String,
    /// What-if keep-alive settings: `off` or a ping interval.
    #[arg(long, default_value = "off,4m30s")]
    pub keepalive: String,
    /// Keep-alive pings stop after this much of an idle gap.
    #[arg(long, default_value = "1h")]
    pub keepalive_limit: String,
    /// How many of the costliest breaks to list.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// A pricing file that adds or replaces models of the bundled table.
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Cache-model parameters (TOML; see docs/cache-models.md). TTLs come from the transcripts.
    #[arg(long)]
    pub cache_config: Option<PathBuf>,
}

fn default_dirs() -> Result<Vec<PathBuf>, CliError> {
    let home = std::env::var_os("HOME").map(PathBuf::from).ok_or_else(|| {
        CliError::input(
            "no folder given and $HOME is not set\n  hint: plancache account ~/.claude/projects",
        )
    })?;
    let dirs: Vec<PathBuf> = [".claude/projects", ".codex/sessions"]
        .iter()
        .map(|d| home.join(d))
        .filter(|d| d.is_dir())
        .collect();
    if dirs.is_empty() {
        return Err(CliError::input(format!(
            "neither {0}/.claude/projects nor {0}/.codex/sessions exists\n  hint: name the folder, e.g. plancache account path/to/projects",
            home.display()
        )));
    }
    Ok(dirs)
}

/// The what-if grid from the flags.
fn settings(args: &AccountArgs) -> Result<Vec<account::Setting>, CliError> {
    if args.strategies.trim() == "none" {
        return Ok(Vec::new());
    }
    let strategies: Vec<String> = crate::strategy::parse_list(&args.strategies)
        .map_err(CliError::input)?
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    let ttls = args
        .ttl
        .split(',')
        .map(whatif::parse_ttl)
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)?;
    let limit: Duration = humantime::parse_duration(&args.keepalive_limit).map_err(|e| {
        CliError::input(format!(
            "--keepalive-limit `{}`: {e}; e.g. --keepalive-limit 1h",
            args.keepalive_limit
        ))
    })?;
    let keepalives = args
        .keepalive
        .split(',')
        .map(|k| whatif::parse_keepalive(k, limit))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)?;
    Ok(whatif::grid(&strategies, &ttls, &keepalives))
}

pub fn run(args: AccountArgs) -> Result<(), CliError> {
    if let Some(dir) = &args.out {
        super::common::check_out_dir(
            dir,
            "account prints the Markdown report; --out names a folder for its files",
        )?;
    }
    let cache = cache_list(&args.cache)?;
    if cache.len() != 1 {
        return Err(CliError::input(
            "account replays against one cache model; e.g. --cache anthropic",
        ));
    }
    let dirs = if args.dirs.is_empty() {
        default_dirs()?
    } else {
        args.dirs.clone()
    };
    let mut sessions = Vec::new();
    for d in &dirs {
        let found = discover::discover_readable(d).map_err(CliError::input)?;
        if !found.not_read.is_empty() {
            super::output::warn(&discover::not_read_text(&found.not_read));
        }
        sessions.extend(found.sessions);
    }
    if sessions.is_empty() {
        return Err(CliError::input(format!(
            "no session transcript (*.jsonl) under {}\n  hint: Claude Code keeps them in ~/.claude/projects, Codex in ~/.codex/sessions",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let env = ReplayEnv {
        prices: price_table(args.pricing.as_deref())?,
        caches: cache_config(args.cache_config.as_deref())?,
        ..ReplayEnv::default()
    };
    let opts = AccountOptions {
        cache: cache[0].clone(),
        strategy: args.strategy.clone(),
        sharing: args.shared_prefix,
        whatif: settings(&args)?,
        ..AccountOptions::default()
    };
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(0);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta} left)")
        {
            b.set_style(style.progress_chars("=> "));
        }
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let a = account::run(&sessions, &opts, &env, &bar).map_err(CliError::input)?;
    if a.sessions.is_empty() {
        let why: Vec<String> = a
            .failures
            .iter()
            .map(|f| format!("  {}: {}", f.session, f.message))
            .collect();
        return Err(CliError::input(format!(
            "no session could be replayed:\n{}",
            why.join("\n")
        )));
    }
    let md = account::report::markdown(&a, &env.prices, args.top);
    print!("{md}");
    if let Some(dir) = &args.out {
        let by_day = account::report::cost_by_day(&a);
        let chart = crate::chart::svg(&by_day).map_err(CliError::input)?;
        let html = account::report::html(&a, &env.prices, args.top, &chart);
        let csv = account::report::csv(&a).map_err(CliError::input)?;
        let sessions_csv = account::report::sessions_csv(&a).map_err(CliError::input)?;
        // One transaction, as `report`: the six files together or the previous six.
        let out = OutputDir::begin(dir, "account").map_err(CliError::input)?;
        let at = |name: &str| out.path().join(name);
        write_atomic(&at("account.md"), md.as_bytes()).map_err(CliError::input)?;
        write_atomic(&at("account.html"), html.as_bytes()).map_err(CliError::input)?;
        write_atomic(&at("account.csv"), &csv).map_err(CliError::input)?;
        write_atomic(&at("sessions.csv"), &sessions_csv).map_err(CliError::input)?;
        write_atomic(&at("cost-by-day.svg"), chart.as_bytes()).map_err(CliError::input)?;
        crate::chart::png(&by_day, &at("cost-by-day.png")).map_err(CliError::input)?;
        out.commit().map_err(CliError::input)?;
        eprintln!("wrote {}", dir.display());
    }
    Ok(())
}
