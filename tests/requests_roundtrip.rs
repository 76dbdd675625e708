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
        let sessions = plancache::cli::load_sessions(std::slice::from_ref(&path)).unwrap();
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
