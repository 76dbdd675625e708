//! `plancache validate`: replay real transcripts and compare with the recorded cache counters.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::Args;

use super::common::cache_list;
use super::CliError;
use plancache::export::{write_atomic, OutputDir};
use plancache::import::discover::{
    discover_readable, group, not_read_text, read_session, SessionFiles,
};
use plancache::import::{Events, Harness};
use plancache::validate::{
    validate as run_validation, FirstRequest, SessionCache, SharedPrefix, ValidateOptions,
};

/// Import transcripts, replay them as the harness did, and report the simulator's error against
/// what was billed (per request CSV + Markdown summary).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache validate session.jsonl
  plancache validate ~/.claude/projects/-home-me-repo
  plancache validate session.jsonl session/subagents/agent-a1.jsonl
  plancache validate session.jsonl --events billed
  plancache validate tests/fixtures/transcripts/dkimuson_*.jsonl --out validation
  plancache validate session.jsonl --first-request include --shared-prefix none

Writes DIR/validation.csv (one row per request) and DIR/validation.md with --out; prints the
Markdown summary. docs/validation.md explains every figure.")]
pub struct ValidateArgs {
    /// Transcripts (JSONL), session folders, project folders or a projects folder. Files are
    /// grouped into sessions: a subagent file (`<session>/subagents/agent-*.jsonl`) replays with
    /// its main file against one cache.
    #[arg(required = true)]
    pub transcripts: Vec<PathBuf>,
    /// Which harness wrote them: claude-code or codex (default: told from each file's records).
    #[arg(long, value_name = "KIND", value_parser = super::common::kind_parser())]
    pub kind: Option<String>,
    /// Where replayed events come from: `transcript` (the records' content and timestamps only)
    /// or `billed` (also breaks placed from the billed cache reads, each marked in the scenario).
    #[arg(long, value_parser = super::values::parser::<super::values::Events, Events>(), default_value = "transcript")]
    pub events: Events,
    /// The TTL class each stream's harness asked for: `auto` (default: per stream, the class its
    /// written tokens were billed at, a request-side setting the bill reveals; a stream that wrote
    /// nothing takes the version rule, a fork the main thread's class), `version` (Claude Code
    /// 2.1 and later: 1h on the main thread, 5m in subagents; older: 5m), or `5m` / `1h`.
    #[arg(long, default_value = "auto", value_parser = plancache::import::TtlChoice::parse)]
    pub ttl: plancache::import::TtlChoice,
    /// The strategy the harness used.
    #[arg(long, default_value = "permission-mode")]
    pub strategy: String,
    /// The cache model to replay against.
    /// (Default: `openai` when every transcript is a Codex rollout, else `anthropic`.)
    #[arg(long)]
    pub cache: Option<String>,
    /// Keep the first request of each stream out of the error figures, or count it.
    #[arg(long, value_parser = super::values::parser::<super::values::FirstRequest, FirstRequest>(), default_value = "apart")]
    pub first_request: FirstRequest,
    /// Cache the leading block the first request read from an earlier session before replaying.
    #[arg(long, value_parser = super::values::parser::<super::values::SharedPrefix, SharedPrefix>(), default_value = "recorded")]
    pub shared_prefix: SharedPrefix,
    /// Mispredicted: |Δcache_read| above this share of the prompt.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,
    /// Whether the transcripts share one cache: `account` (one user's sessions on one clock: a
    /// session reads what an earlier one left while it lives) or `apart` (a cache per transcript).
    #[arg(long, value_parser = super::values::parser::<super::values::SessionCache, SessionCache>(), default_value = "account")]
    pub sessions: SessionCache,
    /// Write validation.csv and validation.md into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
    /// Cache-model parameters (TOML; see docs/cache-models.md). The TTLs are taken from the
    /// transcript whatever the file says.
    #[arg(long, value_name = "FILE")]
    pub cache_config: Option<PathBuf>,
}

pub fn validate(args: ValidateArgs) -> Result<(), CliError> {
    if let Some(dir) = &args.out {
        super::common::check_out_dir(dir, "validate prints the summary; --out names a folder for validation.csv and validation.md")?;
    }
    let harness = super::common::transcript_kind(args.kind.as_deref(), "validate")?;
    // A cache named on the command line is checked before any transcript is read.
    if let Some(c) = &args.cache {
        cache_list(c)?;
    }
    if !(0.0..=1.0).contains(&args.tolerance) {
        return Err(CliError::input(format!(
            "--tolerance {} is not a share between 0 and 1; e.g. --tolerance 0.05",
            args.tolerance
        )));
    }
    let env = super::common::replay_env(&args.pricing, args.cache_config.as_deref())?;
    let sessions = sessions_of(&args.transcripts).map_err(CliError::input)?;
    let several = sessions.len() > 1;
    // Over several sessions, one that cannot be read is reported and the rest are scored.
    let mut unread: Vec<String> = Vec::new();
    let mut transcripts = Vec::with_capacity(sessions.len());
    for mut s in sessions {
        if let Some(h) = harness {
            s.kind = h;
        }
        match read_session(&s) {
            Ok(t) => transcripts.push(t),
            Err(e) if several => unread.push(e.to_string()),
            Err(e) => return Err(CliError::input(e)),
        }
    }
    if transcripts.is_empty() {
        return Err(CliError::input(format!(
            "no session could be read ({} tried); first: {}",
            unread.len(),
            unread.first().map_or("", |e| e.as_str())
        )));
    }
    // A Codex rollout ran against OpenAI's cache: that is the default for a run of rollouts.
    let all_codex = transcripts
        .iter()
        .all(|t| t.streams.iter().all(|s| s.harness == Harness::Codex));
    let default = if all_codex {
        "openai"
    } else {
        plancache::cache::DEFAULT_CACHE
    };
    let cache = cache_list(args.cache.as_deref().unwrap_or(default))?;
    if cache.len() != 1 {
        return Err(CliError::input(
            "validate replays against one cache model; e.g. --cache anthropic",
        ));
    }
    let opts = ValidateOptions {
        strategy: args.strategy.clone(),
        cache: cache[0].clone(),
        first_request: args.first_request,
        shared_prefix: args.shared_prefix,
        tolerance: args.tolerance,
        events: args.events,
        ttl: args.ttl,
        sessions: args.sessions,
        ..ValidateOptions::default()
    };
    let v = run_validation(&transcripts, &opts, &env).map_err(CliError::input)?;
    let md = v.to_markdown();
    print!("{md}");
    if let Some(dir) = &args.out {
        let csv = v.to_csv().map_err(CliError::input)?;
        // One transaction, as `report`: both files or the previous pair.
        let out = OutputDir::begin(dir, "validate").map_err(CliError::input)?;
        write_atomic(&out.path().join("validation.csv"), &csv).map_err(CliError::input)?;
        write_atomic(&out.path().join("validation.md"), md.as_bytes()).map_err(CliError::input)?;
        out.commit().map_err(CliError::input)?;
        eprintln!("wrote {}", dir.display());
    }
    unread.extend(
        v.skipped
            .iter()
            .map(|s| format!("{}: {}", s.transcript, s.reason)),
    );
    if unread.is_empty() {
        return Ok(());
    }
    for why in &unread {
        eprintln!("skipped: {why}");
    }
    Err(CliError::failed(format!(
        "{} session(s) skipped, {} scored; each skipped one is named above with its reason",
        unread.len(),
        transcripts.len() - v.skipped.len()
    )))
}

/// The sessions named on the command line: folders are searched, files are grouped (a subagent
/// file joins its main file), each session once.
fn sessions_of(paths: &[PathBuf]) -> Result<Vec<SessionFiles>, plancache::import::ImportError> {
    let mut files = Vec::new();
    let mut out: Vec<SessionFiles> = Vec::new();
    for p in paths {
        if p.is_dir() {
            let found = discover_readable(p)?;
            if !found.not_read.is_empty() {
                super::output::warn(&not_read_text(&found.not_read));
            }
            for s in found.sessions {
                files.extend(s.files().into_iter().map(|f| f.to_path_buf()));
            }
        } else {
            files.push(p.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(f.clone()));
    out.extend(group(&files)?);
    Ok(out)
}
