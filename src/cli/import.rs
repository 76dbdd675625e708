//! `plancache import`: turn a real session transcript into scenario files.

use std::path::{Path, PathBuf};

use clap::Args;

use super::CliError;
use plancache::export::write_atomic;
use plancache::import::{build_scenarios, check_sizes, Events, Harness, ImportOptions, StreamKind};

/// Turn a Claude Code transcript (or a Codex CLI rollout) into scenarios, one per request stream.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache import ~/.claude/projects/p/SESSION.jsonl --out imported/session.toml   (kind detected)
  plancache import claude-code ~/.claude/projects/p/SESSION.jsonl --out imported/session.toml
  plancache import codex rollout-2025-09-01.jsonl --out imported/rollout.toml
  plancache import requests log-2026-12-01.jsonl --out imported/log.toml   (raw API logs: docs/raw-requests.md)
  plancache import trace traces/ --out imported/   (block-hash traces: docs/workloads.md)

The main stream goes to --out; each subagent stream to <out stem>.agent-N.toml beside it.
Without --out the main scenario is printed. Unreadable records are counted and listed on stderr.")]
pub struct ImportArgs {
    /// Which harness wrote the log: claude-code or codex; `requests` for a raw API request log
    /// (VCR cassette, claude-trace JSONL, HAR, OpenTelemetry JSON); or `trace` for a block-hash
    /// trace file or directory (kv-cache-tester JSON, Mooncake JSONL). Or the transcript itself,
    /// its kind then told from its records (default: detected).
    #[arg(value_name = "KIND|FILE")]
    pub kind_or_file: String,
    /// The transcript (JSONL), log or trace, after KIND.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The KIND named on the command line (`None`: detected); set by [`ImportArgs::settle`].
    #[arg(skip)]
    pub kind: Option<String>,
    /// The file to read; set by [`ImportArgs::settle`].
    #[arg(skip)]
    pub transcript: PathBuf,
    /// The file to write the main stream's scenario to (`-`: standard output, as without it).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where events come from: `transcript` (the records' content and timestamps only) or
    /// `billed` (also breaks placed from the billed cache reads, each marked
    /// `# inferred from billed cache_read` in the scenario).
    #[arg(long, value_parser = super::values::parser::<super::values::Events, Events>(), default_value = "transcript")]
    pub events: Events,
    /// The TTL class each stream's harness asked for: `auto` (default: per stream, the class its
    /// written tokens were billed at, a request-side setting the bill reveals; a stream that wrote
    /// nothing takes the version rule, a fork the main thread's class), `version` (Claude Code
    /// 2.1 and later: 1h on the main thread, 5m in subagents; older: 5m), or `5m` / `1h`.
    #[arg(long, default_value = "auto", value_parser = plancache::import::TtlChoice::parse)]
    pub ttl: plancache::import::TtlChoice,
    /// The file kind, as for every command: claude-code or codex (a transcript), vcr,
    /// claude-trace, har or otel (`import requests`), kv-cache-tester or mooncake (`import
    /// trace`); default: detected.
    #[arg(long = "kind", id = "log_kind", value_name = "KIND", value_parser = super::common::kind_parser())]
    pub log_kind: Option<String>,
}

fn sibling(out: &Path, stream: &str) -> PathBuf {
    let stem = out
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("scenario");
    out.with_file_name(format!("{stem}.{stream}.toml"))
}

/// The subagent scenarios go beside `--out`: each such file is checked like `--out` itself, and
/// a stream `--out` (a device, a FIFO) has no "beside".
fn check_siblings(
    out: &Path,
    scenarios: &[plancache::import::ImportedScenario],
    inputs: &[PathBuf],
) -> Result<(), CliError> {
    let agents: Vec<_> = scenarios
        .iter()
        .filter(|s| s.kind == StreamKind::Agent)
        .collect();
    if agents.is_empty() {
        return Ok(());
    }
    if let Ok(plancache::export::target::FileTarget::Stream(_)) =
        plancache::export::target::file_target("--out", out)
    {
        return Err(CliError::input(format!(
            "--out {}: is a stream, and the transcript has {} subagent stream(s) that are written to files beside --out\n  hint: give --out a file name in a folder, e.g. --out imported/session.toml",
            out.display(),
            agents.len()
        )));
    }
    for s in agents {
        super::common::check_file_out("--out (subagent file)", &sibling(out, &s.stream), inputs)?;
    }
    Ok(())
}

/// The KIND words the first positional may be.
const KIND_WORDS: &[&str] = &["claude-code", "codex", "requests", "trace"];

impl ImportArgs {
    /// Reads `KIND FILE` or `FILE` into [`ImportArgs::kind`] and [`ImportArgs::transcript`].
    pub fn settle(&mut self) -> Result<(), CliError> {
        match self.file.take() {
            Some(file) => {
                self.kind = Some(self.kind_or_file.clone());
                self.transcript = file;
            }
            None => {
                let first = PathBuf::from(&self.kind_or_file);
                if KIND_WORDS.contains(&self.kind_or_file.as_str()) && !first.exists() {
                    return Err(CliError::input(format!(
                        "import {0}: no file given\n  hint: plancache import {0} FILE (or plancache import FILE: the kind is told from its records)",
                        self.kind_or_file
                    )));
                }
                self.kind = None;
                self.transcript = first;
            }
        }
        Ok(())
    }
}

/// What `import` reads, from the positional KIND and `--kind`.
enum What {
    /// A raw API request log, of this kind (`None`: detected).
    Requests(Option<plancache::requests::LogKind>),
    /// A block-hash trace (its kind, if given, is `--kind`).
    Trace,
    /// A session transcript of this harness.
    Transcript(Harness),
}

fn what(args: &ImportArgs) -> Result<What, CliError> {
    let flag = args.log_kind.as_deref();
    let is_trace = |k: &str| matches!(k, "kv-cache-tester" | "kvct" | "mooncake");
    match (args.kind.as_deref(), flag) {
        (Some("requests"), k) => Ok(What::Requests(super::common::log_kind(k, "import requests")?)),
        (Some("trace"), Some(k)) if !is_trace(k) => Err(CliError::input(format!(
            "--kind {k}: `import trace` reads block-hash traces\n  hint: use kv-cache-tester or mooncake (default: detected)"
        ))),
        (Some("trace"), _) => Ok(What::Trace),
        (Some(k), Some(f)) => Err(CliError::input(format!(
            "--kind {f} with KIND `{k}`: name the kind once\n  hint: `plancache import {k} FILE`, or `plancache import FILE --kind {f}`"
        ))),
        (Some(k), None) => Harness::parse(k).map(What::Transcript).map_err(|e| {
            CliError::input(format!("{e}, requests or trace (or leave it out: detected)"))
        }),
        (None, Some(k)) if is_trace(k) => Ok(What::Trace),
        (None, Some(k)) => match Harness::parse(k) {
            Ok(h) => Ok(What::Transcript(h)),
            Err(_) => Ok(What::Requests(super::common::log_kind(Some(k), "import")?)),
        },
        (None, None) => plancache::import::discover::sniff_kind(&args.transcript)
            .map(What::Transcript)
            .map_err(CliError::input),
    }
}

/// The hint for a transcript with no request: the kind its records show when it differs from
/// the one named.
fn kind_hint(args: &ImportArgs, harness: Harness) -> String {
    let name = |h: Harness| match h {
        Harness::ClaudeCode => "claude-code",
        Harness::Codex => "codex",
    };
    let named = args.kind.is_some() || args.log_kind.is_some();
    match plancache::import::discover::sniff_kind(&args.transcript) {
        Ok(seen) if named && seen != harness => format!(
            "its records are a {} log's, not {}'s: `plancache import {} {}` (or leave the kind out: detected)",
            name(seen),
            name(harness),
            name(seen),
            args.transcript.display()
        ),
        _ if named => format!("is this a {} log?", name(harness)),
        _ => format!(
            "read as a {} log (told from its records); a raw API request log is `plancache import requests FILE`, a block-hash trace `plancache import trace FILE`",
            name(harness)
        ),
    }
}

pub fn import(mut args: ImportArgs) -> Result<(), CliError> {
    args.settle()?;
    // `--out -` is standard output, as for every other file output (not a file named `-`).
    if args.out.as_deref() == Some(Path::new("-")) {
        args.out = None;
    }
    let harness = match what(&args)? {
        What::Requests(kind) => {
            return super::explain::import_requests(&args.transcript, kind, args.out.as_deref())
        }
        What::Trace => {
            return super::workload::import_trace(
                &args.transcript,
                args.log_kind.as_deref(),
                args.out.as_deref(),
            )
        }
        What::Transcript(h) => h,
    };
    let inputs = std::slice::from_ref(&args.transcript);
    if let Some(out) = &args.out {
        super::common::check_file_out("--out", out, inputs)?;
    }
    let t = harness.read(&args.transcript).map_err(CliError::input)?;
    check_sizes(&t).map_err(CliError::input)?;
    let opts = ImportOptions {
        events: args.events,
        ttl: args.ttl,
        ..ImportOptions::default()
    };
    let scenarios = build_scenarios(&t, &opts);
    if scenarios.is_empty() {
        return Err(CliError::input(format!(
            "{}: no API request with usage found ({} lines, {} skipped)\n  hint: {}",
            t.source,
            t.lines,
            t.skipped.len(),
            kind_hint(&args, harness)
        )));
    }
    for s in &t.skipped {
        eprintln!("{}: skipped {s}", t.source);
    }
    eprintln!(
        "{}: {} lines, {} records not interpreted, {} streams, {} requests, events from the {}{}",
        t.source,
        t.lines,
        t.skipped.len(),
        scenarios.len(),
        scenarios.iter().map(|s| s.requests.len()).sum::<usize>(),
        args.events.as_str(),
        match args.events {
            Events::Transcript => String::new(),
            Events::Billed => format!(
                " ({} event(s) inferred from billed cache_read)",
                scenarios
                    .iter()
                    .map(|s| s.inferred_steps.len())
                    .sum::<usize>()
            ),
        }
    );
    if let Some(out) = &args.out {
        check_siblings(out, &scenarios, inputs)?;
    }
    for s in &scenarios {
        let text = s.to_toml(&t.source).map_err(CliError::input)?;
        match (&args.out, s.kind) {
            (Some(out), StreamKind::Main) => {
                write_atomic(out, text.as_bytes()).map_err(CliError::input)?;
                eprintln!("wrote {}", out.display());
            }
            (Some(out), StreamKind::Agent) => {
                let p = sibling(out, &s.stream);
                write_atomic(&p, text.as_bytes()).map_err(CliError::input)?;
                eprintln!("wrote {}", p.display());
            }
            (None, StreamKind::Main) => print!("{text}"),
            (None, StreamKind::Agent) => {
                eprintln!(
                    "{}: {} requests (use --out to write it)",
                    s.stream,
                    s.requests.len()
                )
            }
        }
    }
    Ok(())
}
