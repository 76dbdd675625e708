//! `plancache explain`: why each request of a raw API log read what it read.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::common::prices;
use super::CliError;
use crate::requests::{self, ExplainRow, LogKind};

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
    /// A pricing file that adds or replaces models of the bundled table (docs/pricing.md).
    #[arg(long, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
    /// Prices for models the table does not know: input=USD,output=USD per million tokens
    /// [,write_5m=X,write_1h=X,read=X,context_window=N] (docs/pricing.md).
    #[arg(long, value_name = "SPEC", value_parser = crate::cache::ModelPrice::from_spec)]
    pub price: Option<crate::cache::ModelPrice>,
}

/// How `explain` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    Table,
    Json,
    Markdown,
}

pub fn explain(args: ExplainArgs) -> Result<(), CliError> {
    let prices = prices(args.pricing.as_deref(), args.price.as_ref())?;
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
        ExplainFormat::Table => render(&rows, false),
        ExplainFormat::Markdown => render(&rows, true),
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

fn opt(n: Option<u64>) -> String {
    n.map_or("-".into(), |n| n.to_string())
}

/// The columns of `explain`'s table (and of the report's per-request view of a log).
const HEAD: [&str; 10] = [
    "#",
    "stream",
    "model",
    "prompt",
    "read",
    "write",
    "pred read",
    "pred write",
    "first difference",
    "cause",
];

/// One table row per explained request (a break's number marked `*`).
fn cells(rows: &[ExplainRow]) -> Vec<[String; 10]> {
    rows.iter()
        .map(|r| {
            [
                format!("{}{}", r.index + 1, if r.is_break { "*" } else { "" }),
                r.stream.clone(),
                r.model.clone(),
                r.prompt.to_string(),
                opt(r.billed_read),
                opt(r.billed_write),
                r.predicted_read.to_string(),
                r.predicted_write.to_string(),
                r.diverges_at.clone().unwrap_or_else(|| "-".into()),
                r.cause.name().to_string(),
            ]
        })
        .collect()
}

/// One line per request with a cause: its detail, the marks it invalidates, the provider's
/// verdict.
fn details(rows: &[ExplainRow]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.cause != requests::Cause::None)
        .map(|r| {
            let mut line = format!("{} ({}): {}", r.index + 1, r.place, r.detail);
            if !r.invalidated.is_empty() {
                let _ = write!(line, "; invalidates {}", r.invalidated.join(", "));
            }
            if let Some(v) = &r.verdict {
                let _ = write!(line, "; provider says: {v}");
            }
            line
        })
        .collect()
}

/// The table (or Markdown table) of rows, then one line per break with its detail.
pub fn render(rows: &[ExplainRow], markdown: bool) -> String {
    let head = HEAD;
    let cells = cells(rows);
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "| {} |", head.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
        for c in &cells {
            let _ = writeln!(
                out,
                "| {} |",
                c.join(" | ").replace('|', "\\|").replace(" \\| ", " | ")
            );
        }
    } else {
        let widths: Vec<usize> = (0..head.len())
            .map(|k| {
                cells
                    .iter()
                    .map(|c| c[k].chars().count())
                    .chain([head[k].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |c: &[&str]| -> String {
            c.iter()
                .zip(&widths)
                .map(|(s, w)| format!("{s:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let _ = writeln!(out, "{}", line(&head));
        for c in &cells {
            let v: Vec<&str> = c.iter().map(String::as_str).collect();
            let _ = writeln!(out, "{}", line(&v));
        }
    }
    out.push('\n');
    let bullet = if markdown { "- " } else { "" };
    for line in details(rows) {
        let _ = writeln!(out, "{bullet}{line}");
    }
    out
}

/// The same table and lines as HTML, for the report.
pub fn render_html(rows: &[ExplainRow]) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut out = String::from("<table>\n<thead><tr>");
    for h in HEAD {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for c in cells(rows) {
        out.push_str("<tr>");
        for v in &c {
            let _ = write!(out, "<td>{}</td>", esc(v));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n<ul>\n");
    for line in details(rows) {
        let _ = writeln!(out, "<li>{}</li>", esc(&line));
    }
    out.push_str("</ul>\n");
    out
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
                crate::export::write_atomic(&p, text.as_bytes()).map_err(CliError::input)?;
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
    #[arg(long, value_enum, default_value = "claude-trace")]
    pub format: requests::export::ExportKind,
    /// The cache model whose marks the bodies carry and whose usage the responses report:
    /// `anthropic-auto` (top-level `cache_control`) or `anthropic-explicit` (the scenario's marks).
    #[arg(long, default_value = "anthropic-auto")]
    pub cache: String,
    /// Output file (default, or `-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A pricing file that adds or replaces models of the bundled table (docs/pricing.md).
    #[arg(long, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
    /// Prices for models the table does not know: input=USD,output=USD per million tokens
    /// [,write_5m=X,write_1h=X,read=X,context_window=N] (docs/pricing.md).
    #[arg(long, value_name = "SPEC", value_parser = crate::cache::ModelPrice::from_spec)]
    pub price: Option<crate::cache::ModelPrice>,
}

pub fn export_requests(a: ExportRequestsArgs) -> Result<(), CliError> {
    use super::common::{check_models, load_sessions, strategies, Sink};
    let automatic = match a.cache.as_str() {
        "anthropic-auto" => Some(crate::cache::CacheConfig::default().anthropic_auto.message_ttl.as_str()),
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
    let strategies = strategies(&a.strategy)?;
    let [strategy] = strategies.as_slice() else {
        return Err(CliError::input(
            "export one strategy at a time; e.g. --strategy permission-mode",
        ));
    };
    let mut env = crate::engine::ReplayEnv {
        prices: prices(a.pricing.as_deref(), a.price.as_ref())?,
        ..crate::engine::ReplayEnv::default()
    };
    let sessions = load_sessions(std::slice::from_ref(&a.scenario))?;
    check_models(&sessions, &mut env.prices)?;
    let mut c = crate::cache::build(&a.cache, &env.prices).map_err(CliError::input)?;
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
