//! The importer's mechanics, one hand-made fixture each (tests/fixtures/transcripts/events,
//! written by its generate.py, which states every figure): forks of the main thread, the
//! "clear context" plan approval, a first request that must not size the static prefix, records
//! re-written on resume, and Claude Code 2.0.x subagent files beside the main file.

use std::path::{Path, PathBuf};

use plancache::engine::ReplayEnv;
use plancache::import::discover::{discover, group, read_session};
use plancache::import::{build_scenarios, ImportOptions, StreamKind};
use plancache::plan_mode::Mode;
use plancache::scenario::{Blocks, Step};
use plancache::validate::{validate, RequestCheck, ValidateOptions, Validation};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts/events")
        .join(name)
}

fn run(name: &str) -> Validation {
    let files = group(&[fixture(name)]).unwrap();
    let t: Vec<_> = files.iter().map(|f| read_session(f).unwrap()).collect();
    validate(&t, &ValidateOptions::default(), &ReplayEnv::default()).unwrap()
}

fn req<'a>(v: &'a Validation, id: &str) -> &'a RequestCheck {
    v.checks.iter().find(|c| c.request_id == id).unwrap()
}

#[test]
fn a_fork_reads_the_main_threads_prompt_and_writes_its_class() {
    let v = run("fork.jsonl");
    // req_k1 re-sends req_f2's prompt (21,000) plus 400 tokens of instruction: it reads all of
    // req_f2's entry, which a fresh subagent (its own static prefix) could not.
    let k1 = req(&v, "req_k1");
    assert!(k1.first_in_stream);
    assert_eq!((k1.recorded_read, k1.predicted_read), (21_000, 21_000));
    // Its second request extends its own first prompt (21,400): read whole.
    let k2 = req(&v, "req_k2");
    assert_eq!((k2.recorded_read, k2.predicted_read), (21_400, 21_400));
    // The 200 new tokens are written (the billed 197 leaves 3 uncached after the last
    // breakpoint), at the main thread's class, 1 h.
    assert_eq!(k2.predicted_creation, 200);
    assert_eq!(k2.recorded_creation, 197);
    let imp = &v.imports[0];
    assert_eq!(imp.streams, 2);
}

#[test]
fn clear_context_approval_leaves_plan_mode_and_restarts_the_conversation() {
    let files = group(&[fixture("clear_context.jsonl")]).unwrap();
    let t = read_session(&files[0]).unwrap();
    let imp = build_scenarios(&t, &ImportOptions::default());
    let main = &imp[0];
    // The ExitPlanMode answer is an approval, not a rejection; the next request is in the mode
    // before plan (default here).
    assert!(main
        .scenario
        .steps
        .iter()
        .any(|s| matches!(s, Step::Approve(a) if a.target == plancache::scenario::Target::Exit)));
    assert!(!main
        .scenario
        .steps
        .iter()
        .any(|s| matches!(s, Step::Reject(_))));
    assert_eq!(main.requests[2].mode, Mode::Default);
    assert!(main.notes.iter().any(|n| n.contains("clear context")));
    let v = run("clear_context.jsonl");
    // 40,000 -> 15,400 tokens: a new conversation; the read stops at tools + system, 14,999.
    let p3 = req(&v, "req_p3");
    assert_eq!((p3.recorded_read, p3.predicted_read), (14_999, 14_999));
    assert!(p3.recorded_break && p3.predicted_break);
    let p4 = req(&v, "req_p4");
    assert_eq!(p4.predicted_read, 15_400);
}

#[test]
fn a_side_request_does_not_size_the_static_prefix() {
    let files = group(&[fixture("side_request.jsonl")]).unwrap();
    let t = read_session(&files[0]).unwrap();
    let imp = build_scenarios(&t, &ImportOptions::default());
    let main = &imp[0];
    // The stream's model is the one most requests ran on; the Haiku request is an override.
    assert_eq!(main.scenario.model, "claude-sonnet-4-5");
    let stat = match &main.scenario.system {
        Blocks::One(c) => c.tokens.unwrap(),
        Blocks::Many(v) => v.iter().map(|c| c.tokens.unwrap_or(0)).sum(),
    };
    // Never above a later prompt of the stream's model: 20,000 - 1.
    assert!(stat <= 19_999, "{stat}");
    let v = run("side_request.jsonl");
    for c in &v.checks {
        assert_eq!(c.predicted_prompt, c.recorded_prompt, "{}", c.request_id);
    }
}

#[test]
fn records_rewritten_on_resume_are_counted_once() {
    let files = group(&[fixture("resume.jsonl")]).unwrap();
    let t = read_session(&files[0]).unwrap();
    let reqs: Vec<_> = t.streams[0].requests().collect();
    let ids: Vec<&str> = reqs.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids, vec!["req_m1", "req_m2", "req_m3"]);
    // req_m1's single tool call is not doubled by its copy.
    assert_eq!(reqs[0].blocks.len(), 1);
    assert!(t.skipped.iter().any(|s| s.reason.contains("written again")));
    let v = run("resume.jsonl");
    let m3 = req(&v, "req_m3");
    assert_eq!((m3.recorded_read, m3.predicted_read), (16_000, 16_000));
    assert!(v
        .checks
        .iter()
        .all(|c| c.predicted_prompt == c.recorded_prompt));
}

#[test]
fn claude_code_2_0_subagent_files_beside_the_main_file_join_its_session() {
    let sessions = discover(&fixture("v20")).unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0].session_id, "s20");
    assert_eq!(sessions[0].subagents.len(), 1);
    let t = read_session(&sessions[0]).unwrap();
    let kinds: Vec<StreamKind> = t.streams.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, vec![StreamKind::Main, StreamKind::Agent]);
    // Given alone, the subagent file still finds its session through its sessionId.
    let alone = group(&[fixture("v20/agent-b7.jsonl")]).unwrap();
    assert_eq!(alone[0].session_id, "s20");
}
