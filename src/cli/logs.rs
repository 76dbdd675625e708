//! Raw API request logs where scenarios are expected: `plancache run LOG` and `report LOG`
//! replay the scenario `import requests` would write for each stream under every strategy, and
//! add the log as sent (`as-sent`, src/requests/as_sent.rs) as the reference row. `report`
//! also gets a section per log: the saving of each design against the log as sent, and the
//! per-request break view (`explain`'s table).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::CliError;
use plancache::engine::{ReplayEnv, RunReport};
use plancache::export::reference;
use plancache::metrics::SummaryRow;
use plancache::requests::as_sent::{self, AS_SENT};
use plancache::requests::scenario::StreamScenario;
use plancache::requests::{self, BuiltLog, LogKind};
use plancache::scenario::Session;

/// Bytes read to tell a log from a scenario file.
const SNIFF_BYTES: usize = 64 * 1024;

/// The kind of `path` when it is a raw API request log given where scenarios are expected: a
/// file not named `*.toml` whose name or first bytes tell a log kind (`explain`'s detection).
pub(super) fn log_input(path: &Path) -> Option<LogKind> {
    if !path.is_file() || path.extension().is_some_and(|x| x == "toml") {
        return None;
    }
    let mut head = vec![0u8; SNIFF_BYTES];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .ok()?;
    requests::detect_kind(path, &String::from_utf8_lossy(&head[..n]))
}

/// The scenario name `import requests` gives a log: its file stem, made safe.
pub(super) fn log_name(log: &Path) -> String {
    log.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("requests")
        .replace(
            |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_',
            "-",
        )
}

/// The rebuilt log and the scenario of each of its streams.
fn log_scenarios(path: &Path, kind: LogKind) -> Result<(BuiltLog, Vec<StreamScenario>), CliError> {
    let exchanges =
        requests::read_log(path, Some(kind)).map_err(|e| CliError::input(e.to_string()))?;
    let log = requests::build_log(path, &exchanges).map_err(|e| CliError::input(e.to_string()))?;
    let streams = requests::scenario::scenarios(&log, &log_name(path));
    if streams.is_empty() {
        return Err(CliError::input(format!(
            "{}: no request of the log has a body, so there is no session to replay\n  hint: `plancache explain {}` shows its billed usage; a log with bodies (claude-trace, HAR, a cassette) can be replayed",
            path.display(),
            path.display()
        )));
    }
    Ok((log, streams))
}

/// The TOML text of each stream's scenario (what `import requests` writes).
pub(super) fn log_texts(path: &Path, kind: LogKind) -> Result<Vec<String>, CliError> {
    let (_, streams) = log_scenarios(path, kind)?;
    let source = path.display().to_string();
    streams
        .iter()
        .map(|s| s.to_toml(&source).map_err(CliError::input))
        .collect()
}

/// The logs among the inputs, with their kinds.
pub(super) fn logs(inputs: &[PathBuf]) -> Vec<(PathBuf, LogKind)> {
    inputs
        .iter()
        .filter_map(|p| log_input(p).map(|k| (p.clone(), k)))
        .collect()
}

/// Puts the as-sent replays of every log among `inputs` (one per cache model) before the
/// first replay of their scenario; returns whether any log was given.
pub(super) fn add_as_sent(
    inputs: &[PathBuf],
    sessions: &[Session],
    caches: &[String],
    env: &ReplayEnv,
    report: &mut RunReport,
) -> Result<bool, CliError> {
    let logs = logs(inputs);
    for (path, kind) in &logs {
        let (log, mut streams) = log_scenarios(path, *kind)?;
        // The names the loaded sessions ended with (a clash renames them after their files).
        let names: Vec<&str> = sessions
            .iter()
            .filter(|s| s.path == *path)
            .map(|s| s.scenario.name.as_str())
            .collect();
        for (s, n) in streams.iter_mut().zip(&names) {
            s.scenario.name = n.to_string();
        }
        let replays = as_sent::replays(&log, &streams, caches, env).map_err(CliError::input)?;
        for s in &streams {
            let at = report
                .replays
                .iter()
                .position(|r| r.scenario == s.scenario.name)
                .unwrap_or(report.replays.len());
            let mine: Vec<_> = replays
                .iter()
                .filter(|r| r.scenario == s.scenario.name)
                .cloned()
                .collect();
            report.replays.splice(at..at, mine);
        }
    }
    Ok(!logs.is_empty())
}

/// The saving table of one scenario: every design against the log as sent, per cache model.
fn savings_rows(rows: &[SummaryRow], scenario: &str) -> Vec<[String; 6]> {
    let saving = reference::savings(rows, AS_SENT);
    let ratio = reference::cells(rows, AS_SENT);
    rows.iter()
        .zip(saving.iter().zip(&ratio))
        .filter(|(r, _)| r.scenario == scenario)
        .map(|(r, (s, x))| {
            [
                r.strategy.clone(),
                r.cache.clone(),
                format!("{:.4}", r.cost_usd),
                s.clone(),
                x[0].clone(),
                format!("{:.1}%", r.hit_rate * 100.0),
            ]
        })
        .collect()
}

const SAVING_HEAD: [&str; 6] = [
    "design", "cache", "cost $", "saving $", "× cost", "hit rate",
];

/// The report's log sections: Markdown, HTML, and (name, `explain --json` text) per log.
type Sections = (String, String, Vec<(String, String)>);

/// The report's section of each log, as Markdown and as HTML: the saving per design, then
/// `explain`'s per-request view (the same rows as `plancache explain LOG --json`).
pub(super) fn report_sections(
    inputs: &[PathBuf],
    run: &RunReport,
    prices: &plancache::cache::PriceTable,
) -> Result<Sections, CliError> {
    let (mut md, mut html, mut json) = (String::new(), String::new(), Vec::new());
    let rows = run.summaries();
    for (path, kind) in logs(inputs) {
        let (log, explained) = requests::explain_file(&path, Some(kind), prices)
            .map_err(|e| CliError::input(e.to_string()))?;
        let file = path.display().to_string();
        let _ = write!(md, "\n## The log as sent: {file}\n\nThe saving of each design against the log as sent (`as-sent`: its own blocks, marks and times, re-rendered by nothing).\n\n| {} |\n|{}\n", SAVING_HEAD.join(" | "), "---|".repeat(SAVING_HEAD.len()));
        let _ = write!(html, "<h2>The log as sent: {}</h2>\n<p>The saving of each design against the log as sent (<code>as-sent</code>: its own blocks, marks and times, re-rendered by nothing).</p>\n<table>\n<thead><tr>{}</tr></thead>\n<tbody>\n", esc(&file), SAVING_HEAD.iter().map(|h| format!("<th>{h}</th>")).collect::<String>());
        for s in requests::scenario::scenarios(&log, &log_name(&path)) {
            for r in savings_rows(&rows, &s.scenario.name) {
                let _ = writeln!(md, "| {} |", r.join(" | "));
                let _ = writeln!(
                    html,
                    "<tr>{}</tr>",
                    r.iter()
                        .map(|c| format!("<td>{}</td>", esc(c)))
                        .collect::<String>()
                );
            }
        }
        html.push_str("</tbody>\n</table>\n");
        let _ = write!(
            md,
            "\n### Requests: why each read fell\n\n{}",
            requests::view::render(&explained, true)
        );
        let _ = write!(
            html,
            "<h3>Requests: why each read fell</h3>\n{}",
            requests::view::render_html(&explained)
        );
        let text = serde_json::to_string_pretty(&explained)
            .map_err(|e| CliError::input(e.to_string()))?
            + "\n";
        json.push((log_name(&path), text));
    }
    Ok((md, html, json))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Appends the log sections to `dir/report.md` and `dir/report.html`, and writes each log's
/// rows as `dir/explain/NAME.json`.
pub(super) fn write_report_sections(
    dir: &Path,
    inputs: &[PathBuf],
    run: &RunReport,
    prices: &plancache::cache::PriceTable,
) -> Result<(), CliError> {
    let (md, html, json) = report_sections(inputs, run, prices)?;
    if json.is_empty() {
        return Ok(());
    }
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| CliError::input(format!("{}: {e}", p.display())))
    };
    let md_path = dir.join("report.md");
    let text = read(&md_path)? + &md;
    plancache::export::write_atomic(&md_path, text.as_bytes()).map_err(CliError::input)?;
    let html_path = dir.join("report.html");
    let page = read(&html_path)?;
    let page = match page.rfind("</body>") {
        Some(at) => format!("{}{html}{}", &page[..at], &page[at..]),
        None => page + &html,
    };
    plancache::export::write_atomic(&html_path, page.as_bytes()).map_err(CliError::input)?;
    let jdir = dir.join("explain");
    std::fs::create_dir_all(&jdir)
        .map_err(|e| CliError::input(format!("{}: {e}", jdir.display())))?;
    for (name, text) in json {
        plancache::export::write_atomic(&jdir.join(format!("{name}.json")), text.as_bytes())
            .map_err(CliError::input)?;
    }
    Ok(())
}
