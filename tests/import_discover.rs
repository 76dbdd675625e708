//! Finding sessions on disk and grouping a session's files into one replay.

use std::path::{Path, PathBuf};

use plancache::engine::ReplayEnv;
use plancache::import::discover::{discover, group, read_session, TranscriptKind};
use plancache::import::StreamKind;
use plancache::validate::{validate_session, ValidateOptions};

fn projects() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts/projects")
}

fn session_files() -> (PathBuf, PathBuf, PathBuf) {
    let p = projects().join("-repo");
    (
        p.join("s1.jsonl"),
        p.join("s1/subagents/agent-a1f.jsonl"),
        p.join("s1/subagents/agent-b2e.jsonl"),
    )
}

#[test]
fn a_projects_folder_a_project_folder_and_a_session_folder_give_one_session() {
    let (main, a, b) = session_files();
    for root in [
        projects(),
        projects().join("-repo"),
        projects().join("-repo/s1"),
    ] {
        let found = discover(&root).unwrap();
        assert_eq!(found.len(), 1, "{}", root.display());
        let s = &found[0];
        assert_eq!(s.kind, TranscriptKind::ClaudeCode);
        assert_eq!(s.session_id, "s1");
        assert_eq!(s.project, "-repo");
        assert_eq!(s.main.as_deref(), Some(main.as_path()));
        assert_eq!(s.subagents, vec![a.clone(), b.clone()]);
    }
}

#[test]
fn a_subagent_file_given_with_its_main_file_joins_it() {
    let (main, a, b) = session_files();
    let g = group(&[a.clone(), main.clone()]).unwrap();
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].main.as_deref(), Some(main.as_path()));
    // The main file brings its other subagent file along.
    assert_eq!(g[0].subagents, vec![a.clone(), b.clone()]);
    // Alone, a subagent file is a session without its main file.
    let g = group(&[a]).unwrap();
    assert_eq!((g.len(), g[0].main.is_none()), (1, true));
}

#[test]
fn files_are_told_apart_by_their_records_and_missing_paths_are_errors() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let g = group(&[
        fixtures.join("codex_rollout.jsonl"),
        fixtures.join("plan_mode.jsonl"),
    ])
    .unwrap();
    let kinds: Vec<_> = g.iter().map(|s| (s.session_id.as_str(), s.kind)).collect();
    assert_eq!(
        kinds,
        // Sorted by folder, then session id.
        vec![
            ("codex_rollout", TranscriptKind::Codex),
            ("plan_mode", TranscriptKind::ClaudeCode)
        ]
    );
    let err = discover(&fixtures.join("nope")).unwrap_err().to_string();
    assert!(err.contains("nope"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let err = discover(empty.path()).unwrap_err().to_string();
    assert!(err.contains("no transcript"), "{err}");
}

#[test]
fn a_session_replays_its_subagents_against_one_cache() {
    let found = discover(&projects().join("-repo/s1")).unwrap();
    let t = read_session(&found[0]).unwrap();
    let names: Vec<(&str, StreamKind)> = t
        .streams
        .iter()
        .map(|s| (s.name.as_str(), s.kind))
        .collect();
    assert_eq!(
        names,
        vec![
            ("main", StreamKind::Main),
            ("agent-a1f", StreamKind::Agent),
            ("agent-b2e", StreamKind::Agent)
        ]
    );
    let v = validate_session(
        &found[0],
        &ValidateOptions::default(),
        &ReplayEnv::default(),
    )
    .unwrap();
    assert_eq!(v.imports.len(), 1, "one session, one replay");
    assert_eq!(v.checks.len(), 6);
    // Agent B was sent 12 s after agent A's first response began: with one account cache its
    // first request reads A's static prefix (same agent type, same tools and system prompt); two
    // separate caches would give it a cold read of 0.
    let b1 = v.checks.iter().find(|c| c.request_id == "req_b1").unwrap();
    assert!(b1.predicted_read > 0, "{b1:?}");
}

#[test]
fn a_main_file_alone_brings_its_subagent_files_into_one_replay() {
    let (main, a, b) = session_files();
    let g = group(std::slice::from_ref(&main)).unwrap();
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].subagents, vec![a, b]);
    let v = validate_session(&g[0], &ValidateOptions::default(), &ReplayEnv::default()).unwrap();
    // One replay of three streams (main + two agents, two requests each), as from the folder.
    assert_eq!(v.imports.len(), 1);
    assert_eq!(v.imports[0].streams, 3);
    assert_eq!(v.checks.len(), 6);
}
