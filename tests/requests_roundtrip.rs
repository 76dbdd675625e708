//! Round trip: for every bundled scenario and every strategy, `export requests` (claude-trace and
//! HAR) then `explain` (which imports the log and replays its exact requests) gives back the
//! scenario's own replay: each request's prompt, read and write.

use std::path::PathBuf;

use plancache::cache;
use plancache::engine::ReplayEnv;
use plancache::requests::export::{export, ExportKind};
use plancache::requests::{explain_file, LogKind};

fn scenarios() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn export_then_explain_reproduces_every_replay() {
    let env = ReplayEnv::default();
    let mut checked = 0;
    for path in scenarios() {
        let sessions = plancache::scenario::load_sessions(std::slice::from_ref(&path)).unwrap();
        for strategy in plancache::strategy::all() {
            for (kind, ext, log_kind) in [
                (ExportKind::ClaudeTrace, "jsonl", LogKind::ClaudeTrace),
                (ExportKind::Har, "har", LogKind::Har),
            ] {
                let mut c = cache::build("anthropic-auto", &env.prices).unwrap();
                let (bytes, n) = export(
                    &sessions[0],
                    strategy.as_ref(),
                    c.as_mut(),
                    &env,
                    Some("5m"),
                    kind,
                )
                .unwrap();
                let f = tempfile::Builder::new()
                    .suffix(&format!(".{ext}"))
                    .tempfile()
                    .unwrap();
                std::fs::write(f.path(), &bytes).unwrap();
                let (_, rows) = explain_file(f.path(), Some(log_kind), &env.prices)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(rows.len(), n, "{} {}", path.display(), strategy.name());
                for r in &rows {
                    let what = format!(
                        "{} {} {:?} request {}",
                        path.display(),
                        strategy.name(),
                        kind,
                        r.index + 1
                    );
                    assert_eq!(r.billed_read, Some(r.predicted_read), "{what}: read");
                    assert_eq!(r.billed_write, Some(r.predicted_write), "{what}: write");
                }
                checked += rows.len();
            }
        }
    }
    assert!(checked > 500, "{checked}");
}

/// The level word of an engine break reason (`tools: prefix changed at tool:Bash (token 800)`)
/// and `explain`'s cause for it, when the reason is one `explain` can see from the bodies.
fn expected_cause(reason: &str) -> Option<&'static str> {
    let (level, rest) = reason.split_once(": ")?;
    if rest.starts_with("prefix changed") {
        return Some(match level {
            "tools" => "tools changed",
            "system" => "system changed",
            _ => "messages changed",
        });
    }
    if rest.starts_with("ttl expired") {
        return Some("ttl expired");
    }
    if rest.starts_with("model changed") {
        return Some("model changed");
    }
    None
}

/// For every break of every bundled replay whose reason the bodies show (a prefix change at a
/// level, a TTL expiry, a model change), `explain` on the exported log names the same cause.
#[test]
fn explain_names_the_replays_break_reasons() {
    let env = ReplayEnv::default();
    let mut compared = 0;
    for path in scenarios() {
        let sessions = plancache::scenario::load_sessions(std::slice::from_ref(&path)).unwrap();
        for strategy in plancache::strategy::all() {
            let mut c = cache::build("anthropic-auto", &env.prices).unwrap();
            let replay =
                plancache::engine::replay(&sessions[0], strategy.as_ref(), c.as_mut(), &env)
                    .unwrap();
            let mut c = cache::build("anthropic-auto", &env.prices).unwrap();
            let (bytes, _) = export(
                &sessions[0],
                strategy.as_ref(),
                c.as_mut(),
                &env,
                Some("5m"),
                ExportKind::ClaudeTrace,
            )
            .unwrap();
            let f = tempfile::Builder::new()
                .suffix(".jsonl")
                .tempfile()
                .unwrap();
            std::fs::write(f.path(), &bytes).unwrap();
            let (_, rows) =
                explain_file(f.path(), Some(LogKind::ClaudeTrace), &env.prices).unwrap();
            // The exported clock starts at the first request sent.
            let first_sent = replay.rows.iter().map(|r| r.sent_at_ms).min().unwrap_or(0);
            for row in replay
                .rows
                .iter()
                .filter(|r| r.cached_tokens * 2 < r.prompt_tokens)
            {
                let Some(want) = expected_cause(&row.break_text()) else {
                    continue;
                };
                let at = row.sent_at_ms - first_sent;
                let Some(e) = rows
                    .iter()
                    .find(|x| x.stream == row.stream && x.at_ms == at)
                else {
                    continue;
                };
                if e.index == 0 || e.cause.name().starts_with("first request") {
                    continue;
                }
                assert_eq!(
                    e.cause.name(),
                    want,
                    "{} {} request at {at} ms: replay says {}; explain: {}",
                    path.display(),
                    strategy.name(),
                    row.break_text(),
                    e.detail
                );
                compared += 1;
            }
        }
    }
    eprintln!("{compared} breaks compared");
    assert!(compared > 20, "{compared}");
}
