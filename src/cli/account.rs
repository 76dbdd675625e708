//! `plancache account`: every session of an account, added up, with the what-if.

use super::common::PricingArgs;
use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::common::cache_list;
use super::CliError;
use plancache::account::select::Selection;
use plancache::account::views::View;
use plancache::account::{self, whatif, AccountOptions, Sharing};
use plancache::export::{write_atomic, OutputDir};
use plancache::import::discover;

/// Replay every session under a Claude Code projects folder (and/or a Codex sessions folder) on
/// one account timeline: cost, tokens, hit rate and breaks by day, project and model, billed
/// beside predicted, and what the same sessions would cost under other strategies, TTLs and
/// keep-alives.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache account                                   # ~/.claude/projects and ~/.codex/sessions
  plancache account ~/.claude/projects --out account
  plancache account DIR --what-if-strategy permission-mode,toolset-swap --what-if-ttl 5m,1h --what-if-keepalive off,4m30s
  plancache account DIR --shared-prefix none          # every session cold: sums of lone replays
  plancache account weekly DIR --timezone Asia/Tokyo --since 2025-10-01 --until 20251031
  plancache account blocks DIR --billed-only --json   # 5-hour billing blocks, usage records only
  plancache account session DIR --project -home-u-repo

VIEW (first word, as ccusage): daily (default), weekly, monthly, session, blocks. Prints the
view as a table (billed beside predicted), the predicted breaks by cause and the what-if; with
--out also writes DIR/account.md, account.html, account.csv (day x project x model, UTC days),
sessions.csv and cost-by-day.svg/.png. Exit 1 when some session could not be replayed (each is
named with its file, line and reason; the others are counted), 2 when none could.
docs/account.md explains every figure.")]
pub struct AccountArgs {
    /// [VIEW] then folders or transcript files to scan (default: ~/.claude/projects and ~/.codex/sessions,
    /// those that exist). A leading daily|weekly|monthly|session|blocks picks the view unless a
    /// path of that name exists.
    #[arg(value_name = "[VIEW] DIR")]
    pub dirs: Vec<PathBuf>,
    /// Count requests from this day on (YYYY-MM-DD or YYYYMMDD, in --timezone).
    #[arg(long, short = 's')]
    pub since: Option<String>,
    /// Count requests up to this day, inclusive (YYYY-MM-DD or YYYYMMDD, in --timezone).
    #[arg(long, short = 'u')]
    pub until: Option<String>,
    /// IANA time zone for days, weeks, months and block labels (default: the system's, as
    /// ccusage; `UTC`, `America/New_York`, ...).
    #[arg(long, short = 'z')]
    pub timezone: Option<String>,
    /// Only sessions of this project (its label as the session view prints it: Claude Code's
    /// project folder name, a Codex session's working folder spelled the same way). Such names
    /// start with `-`: `--project -home-u-repo` works as it is.
    #[arg(long, allow_hyphen_values = true)]
    pub project: Option<String>,
    /// First day of a week in the weekly view.
    #[arg(long, default_value = "sunday")]
    pub start_of_week: String,
    /// Print the view as JSON instead of tables.
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Billed figures only: no replay, no prediction, no what-if (fast, like ccusage).
    #[arg(long)]
    pub billed_only: bool,
    /// Write the report files into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Which harness wrote the transcripts: claude-code or codex (default: told from each
    /// file's records).
    #[arg(long, value_name = "KIND", value_parser = super::common::kind_parser())]
    pub kind: Option<String>,
    /// The strategy the harness ran (one; default: permission-mode).
    #[arg(long, value_name = "STRATEGY", default_value = "permission-mode")]
    pub strategy: String,
    /// Cache model for Claude Code sessions (Codex sessions use `openai`).
    #[arg(long, value_name = "CACHE", default_value = plancache::cache::DEFAULT_CACHE)]
    pub cache: String,
    /// How sessions share the account's leading tools/system block.
    #[arg(long, value_parser = super::values::parser::<super::values::Sharing, Sharing>(), default_value = "timeline")]
    pub shared_prefix: Sharing,
    /// What-if strategies (comma-separated, or `all`); `none` skips the what-if.
    /// (`--strategies` is the old spelling.)
    #[arg(
        long = "what-if-strategy",
        alias = "strategies",
        value_name = "STRATEGIES",
        default_value = "all"
    )]
    pub strategies: String,
    /// What-if TTL classes, comma-separated: 5m, 1h. (`--ttl` is the old spelling.)
    #[arg(
        long = "what-if-ttl",
        alias = "ttl",
        value_name = "TTLS",
        default_value = "5m,1h"
    )]
    pub ttl: String,
    /// What-if keep-alive settings, comma-separated: `off` or a ping interval.
    /// (`--keepalive` is the old spelling.)
    #[arg(
        long = "what-if-keepalive",
        alias = "keepalive",
        value_name = "INTERVALS",
        default_value = "off,4m30s"
    )]
    pub keepalive: String,
    /// Keep-alive pings stop after this much of an idle gap.
    #[arg(long, default_value = "1h")]
    pub keepalive_limit: String,
    /// How many of the costliest breaks to list.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
    /// Cache-model parameters (TOML; see docs/cache-models.md). TTLs come from the transcripts.
    #[arg(long, value_name = "FILE")]
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
    let strategies: Vec<String> = plancache::strategy::parse_list(&args.strategies)
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

/// The view named by the first positional word (unless a path of that name exists), and the
/// paths after it.
fn view_and_paths(args: &AccountArgs) -> (View, Vec<PathBuf>) {
    let mut paths = args.dirs.clone();
    let view = paths
        .first()
        .filter(|p| !p.exists())
        .and_then(|p| p.to_str())
        .and_then(View::parse);
    if view.is_some() {
        paths.remove(0);
    }
    (view.unwrap_or(View::Daily), paths)
}

/// Every session under `paths`, each file once by its canonical path and each session once
/// by its id (`account D D/x.jsonl`, or one session in two folders given, counts once).
fn sessions_of(paths: &[PathBuf]) -> Result<Vec<discover::SessionFiles>, CliError> {
    let mut files = Vec::new();
    for p in paths {
        // Entries that are not readable files are listed and the rest is read.
        let found = discover::discover_readable(p).map_err(CliError::input)?;
        if !found.not_read.is_empty() {
            super::output::warn(&discover::not_read_text(&found.not_read));
        }
        for s in found.sessions {
            files.extend(s.files().into_iter().map(Path::to_path_buf));
        }
    }
    let mut seen = HashSet::new();
    files.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    let mut ids = HashSet::new();
    let mut out = Vec::new();
    for s in discover::group(&files).map_err(CliError::input)? {
        if ids.insert((
            s.kind == discover::TranscriptKind::Codex,
            s.session_id.clone(),
        )) {
            out.push(s);
        } else {
            eprintln!(
                "note: session {} given twice ({}): counted once",
                s.session_id,
                s.label()
            );
        }
    }
    Ok(out)
}

pub fn run(args: AccountArgs) -> Result<(), CliError> {
    if let Some(dir) = &args.out {
        super::common::check_out_dir(
            dir,
            "account prints its tables; --out names a folder for its report files",
        )?;
    }
    let cache = cache_list(&args.cache)?;
    if cache.len() != 1 {
        return Err(CliError::input(
            "account replays against one cache model; e.g. --cache anthropic",
        ));
    }
    let (view, paths) = view_and_paths(&args);
    let selection = Selection::from_flags(
        args.timezone.as_deref(),
        args.since.as_deref(),
        args.until.as_deref(),
        args.project.as_deref(),
        &args.start_of_week,
    )
    .map_err(|e| CliError::input(e.to_string()))?;
    let sessions = sessions(&args, paths)?;
    let env = super::common::replay_env(&args.pricing, args.cache_config.as_deref())?;
    let opts = AccountOptions {
        cache: cache[0].clone(),
        strategy: args.strategy.clone(),
        sharing: args.shared_prefix,
        whatif: settings(&args)?,
        selection,
        predict: !args.billed_only,
        ..AccountOptions::default()
    };
    let a = account::run(&sessions, &opts, &env, &progress_bar()).map_err(CliError::input)?;
    let why: Vec<String> = a
        .failures
        .iter()
        .map(|f| format!("  {}", f.message))
        .collect();
    if a.sessions.is_empty() && !a.failures.is_empty() {
        return Err(CliError::input(format!(
            "no session could be replayed:\n{}",
            why.join("\n")
        )));
    }
    if a.sessions.is_empty() {
        return Err(CliError::input(format!(
            "no request in the selection ({})\n  hint: check --since/--until/--project",
            describe(&a.options.selection)
        )));
    }
    if args.json {
        let text = serde_json::to_string_pretty(&account::table::json(&a, view))
            .map_err(|e| CliError::input(e.to_string()))?;
        println!("{text}");
    } else {
        print!("{}", account::table::render(&a, view));
    }
    if let Some(dir) = &args.out {
        write_report(dir, &a, &env.prices, args.top)?;
    }
    if !a.failures.is_empty() {
        return Err(CliError::failed(format!(
            "{} of {} sessions could not be replayed and are not counted:\n{}",
            a.failures.len(),
            a.failures.len() + a.sessions.len(),
            why.join("\n")
        )));
    }
    Ok(())
}

/// The session transcripts under the given folders (default: the harnesses' own), with
/// `--kind` applied.
fn sessions(
    args: &AccountArgs,
    paths: Vec<PathBuf>,
) -> Result<Vec<plancache::import::discover::SessionFiles>, CliError> {
    let dirs = if paths.is_empty() {
        default_dirs()?
    } else {
        paths
    };
    let mut sessions = sessions_of(&dirs)?;
    if let Some(h) = super::common::transcript_kind(args.kind.as_deref(), "account")? {
        for s in &mut sessions {
            s.kind = h;
        }
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
    Ok(sessions)
}

/// A progress bar on a terminal, none elsewhere.
fn progress_bar() -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(0);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta} left)")
    {
        b.set_style(style.progress_chars("=> "));
    }
    b
}

/// The report files of `--out DIR`, as one transaction (as `report`): the six files together
/// or the previous six.
fn write_report(
    dir: &Path,
    a: &account::Account,
    prices: &plancache::cache::PriceTable,
    top: usize,
) -> Result<(), CliError> {
    let md = account::report::markdown(a, prices, top);
    let by_day = account::report::cost_by_day(a);
    let chart = plancache::chart::svg(&by_day).map_err(CliError::input)?;
    let html = account::report::html(a, prices, top, &chart);
    let csv = account::report::csv(a).map_err(CliError::input)?;
    let sessions_csv = account::report::sessions_csv(a).map_err(CliError::input)?;
    let out = OutputDir::begin(dir, "account").map_err(CliError::input)?;
    let at = |name: &str| out.path().join(name);
    write_atomic(&at("account.md"), md.as_bytes()).map_err(CliError::input)?;
    write_atomic(&at("account.html"), html.as_bytes()).map_err(CliError::input)?;
    write_atomic(&at("account.csv"), &csv).map_err(CliError::input)?;
    write_atomic(&at("sessions.csv"), &sessions_csv).map_err(CliError::input)?;
    write_atomic(&at("cost-by-day.svg"), chart.as_bytes()).map_err(CliError::input)?;
    plancache::chart::png(&by_day, &at("cost-by-day.png")).map_err(CliError::input)?;
    out.commit().map_err(CliError::input)?;
    eprintln!("wrote {}", dir.display());
    Ok(())
}

fn describe(s: &Selection) -> String {
    let day = |d: Option<jiff::civil::Date>| d.map_or("any".to_string(), |d| d.to_string());
    format!(
        "days {} to {} in {}, project {}",
        day(s.since),
        day(s.until),
        s.tz_name,
        s.project.as_deref().unwrap_or("any")
    )
}
