//! Transcript import: records grouped into requests and streams, plan-mode events, sizes derived
//! from the recorded usage, breaks classified, bad records counted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use plancache::cache;
use plancache::engine::{replay, ReplayEnv};
use plancache::import::{
    build_scenarios, Events, Harness, ImportOptions, ImportedScenario, StreamKind,
};
use plancache::prompt::{Encoding, Tokenizer, Ttl};
use plancache::scenario::{load_str, Session, Step, Target};
use plancache::strategy::parse_list;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts")
        .join(name)
}

fn import(name: &str) -> (plancache::import::Transcript, Vec<ImportedScenario>) {
    let t = Harness::ClaudeCode.read(&fixture(name)).expect("readable");
    let s = build_scenarios(&t, &ImportOptions::default());
    (t, s)
}

fn import_billed(name: &str) -> Vec<ImportedScenario> {
    let t = Harness::ClaudeCode.read(&fixture(name)).expect("readable");
    let opts = ImportOptions {
        events: Events::Billed,
        ..ImportOptions::default()
    };
    build_scenarios(&t, &opts)
}

/// Replays an imported scenario (through its TOML text, as a user would) and returns the
/// predicted prompt sizes.
fn replayed_prompts(imp: &ImportedScenario) -> Vec<u64> {
    let text = imp.to_toml("fixture").expect("toml");
    let path = Path::new("imported.toml");
    let scenario = load_str(&text, path).expect("the emitted scenario loads");
    let session = Session::new(
        scenario,
        path,
        &text,
        Arc::new(Tokenizer::new(Encoding::O200kBase)),
    )
    .expect("session");
    let strategy = parse_list("permission-mode").expect("strategy").remove(0);
    let mut c = cache::build("ideal", &plancache::cache::PriceTable::bundled()).expect("ideal");
    replay(
        &session,
        strategy.as_ref(),
        c.as_mut(),
        &ReplayEnv::default(),
    )
    .expect("replays")
    .rows
    .iter()
    .map(|r| r.prompt_tokens)
    .collect()
}

#[test]
fn plan_mode_events_become_state_machine_steps() {
    let (t, s) = import("plan_mode.jsonl");
    // Lines 9 (torn), 12 (not JSON) and 18 (unknown record type) are counted, nothing else.
    let lines: Vec<usize> = t.skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, vec![9, 12, 18]);
    assert_eq!(s.len(), 1);
    let main = &s[0];
    assert_eq!(main.requests.len(), 7);
    assert_eq!(main.ttl, Some(Ttl::OneHour));
    // The answers to the plan tools, in order: enter approved, exit rejected, exit approved.
    let answers: Vec<String> = main
        .scenario
        .steps
        .iter()
        .filter_map(|st| match st {
            Step::Approve(a) if a.target == Target::Enter => Some("approve enter".into()),
            Step::Approve(a) if a.target == Target::Exit => Some("approve exit".into()),
            Step::Reject(_) => Some("reject".into()),
            Step::Decline(_) => Some("decline".into()),
            _ => None,
        })
        .collect();
    assert_eq!(answers, vec!["approve enter", "reject", "approve exit"]);
    // The 7.5-minute review before the approval is on the simulated clock: from the response
    // of request 5 (10:03:05) to the approval record (10:10:00) is 6 min 55 s.
    assert!(main.scenario.steps.iter().any(
        |st| matches!(st, Step::Wait(w) if w.0 == std::time::Duration::from_secs(6 * 60 + 55))
    ));
}

#[test]
fn replayed_prompt_sizes_equal_the_recorded_ones() {
    let (_, s) = import("plan_mode.jsonl");
    // Recorded prompts: input + creation + read of each request (3+12000, 3+200+12000, ...).
    let recorded: Vec<u64> = s[0]
        .requests
        .iter()
        .map(|r| r.usage.prompt_tokens())
        .collect();
    assert_eq!(
        recorded,
        vec![12003, 12203, 12703, 12803, 12953, 13253, 13313]
    );
    assert_eq!(replayed_prompts(&s[0]), recorded);
}

#[test]
fn billed_mode_places_breaks_from_the_usage_pattern_and_marks_them() {
    let s = import_billed("breaks.jsonl");
    let main = &s[0];
    let unmodelled: Vec<String> = main
        .requests
        .iter()
        .map(|r| r.events.first().map_or(String::new(), ToString::to_string))
        .collect();
    // b3 reads 9940 = the static prefix: an early block changed. b4 reads 4100 < 0.9 x static:
    // tools changed. b5 follows a 10-minute gap (TTL 5 min): left to the cache model. b6 follows
    // a compact summary.
    assert!(
        unmodelled[2].starts_with("early context block edited"),
        "{unmodelled:?}"
    );
    assert!(unmodelled[3].starts_with("tools or system prompt changed"));
    assert!(unmodelled[2].contains("inferred from billed cache_read"));
    assert!(unmodelled[3].contains("inferred from billed cache_read"));
    assert_eq!(unmodelled[4], "");
    assert!(unmodelled[5].starts_with("compaction"));
    assert_eq!(main.ttl, Some(Ttl::FiveMinutes));
    assert_eq!(
        main.scenario.model, "claude-sonnet-4",
        "date suffix dropped"
    );
    // Both placed events are marked at their step in the file and counted in its header.
    assert_eq!(main.inferred_steps.len(), 2);
    let text = main.to_toml("fixture").unwrap();
    assert!(text.contains("# 2 event(s) inferred from billed cache_read"));
    for step in ["edit_context", "add_tool"] {
        let marked = format!("\n# inferred from billed cache_read\n[[steps]]\n\n[steps.{step}]");
        assert_eq!(text.matches(&marked).count(), 1, "{step}: {text}");
    }
}

#[test]
fn transcript_mode_places_no_break_the_records_do_not_show() {
    // breaks.jsonl holds no record of why b3 and b4 read less (no attachment, no system record):
    // from the transcript alone they are unexplained, and only the compaction (a recorded
    // isCompactSummary) is an event.
    let (_, s) = import("breaks.jsonl");
    let main = &s[0];
    let events: Vec<String> = main
        .requests
        .iter()
        .map(|r| r.events.first().map_or(String::new(), ToString::to_string))
        .collect();
    assert_eq!(events[..5], ["", "", "", "", ""]);
    assert!(events[5].starts_with("compaction"));
    assert!(main.inferred_steps.is_empty());
    assert!(!main.to_toml("f").unwrap().contains("inferred"));
}

#[test]
fn sidechains_become_separate_streams_sharing_one_static_prefix() {
    let s = import_billed("sidechains.jsonl");
    let names: Vec<&str> = s.iter().map(|i| i.stream.as_str()).collect();
    assert_eq!(names, vec!["main", "agent-1", "agent-2", "agent-3"]);
    let counts: Vec<usize> = s.iter().map(|i| i.requests.len()).collect();
    assert_eq!(counts, vec![3, 2, 2, 1]);
    // agent-3's first request read 10990 tokens an earlier agent wrote: that is the agents'
    // static prefix, given to every agent stream.
    // (Tools sized from Claude Code's published descriptions, the system block the rest.)
    let static_of = |a: &plancache::import::ImportedScenario| -> u64 {
        let tools: u64 = a
            .scenario
            .tools
            .iter()
            .map(|t| t.tokens.unwrap_or(0) as u64)
            .sum();
        let system: u64 = match &a.scenario.system {
            plancache::scenario::Blocks::One(c) => c.tokens.unwrap_or(0) as u64,
            plancache::scenario::Blocks::Many(v) => {
                v.iter().map(|c| c.tokens.unwrap_or(0) as u64).sum()
            }
        };
        tools + system
    };
    for a in s.iter().filter(|i| i.kind == StreamKind::Agent) {
        assert_eq!(static_of(a), 10990, "{}", a.stream);
    }
    // In transcript mode the read is not used: the static prefix is the first agent's first
    // prompt less its first message, and every agent stream gets that same block.
    let (_, s) = import("sidechains.jsonl");
    let sizes: Vec<u64> = s
        .iter()
        .filter(|i| i.kind == StreamKind::Agent)
        .map(static_of)
        .collect();
    assert_eq!(sizes.len(), 3);
    assert!(sizes.iter().all(|x| *x == sizes[0]), "{sizes:?}");
    assert_ne!(sizes[0], 10990);
}

#[test]
fn the_bundled_real_transcripts_import_without_loss() {
    for (name, streams, requests, shared) in [
        ("dkimuson_1af7fc5e.jsonl", 1, 7, 4734),
        ("dkimuson_5c0375b4.jsonl", 3, 20, 0),
        ("dkimuson_fe5e1c67.jsonl", 6, 170, 14874),
    ] {
        let (t, s) = import(name);
        assert!(t.skipped.is_empty(), "{name}: {:?}", t.skipped);
        assert_eq!(s.len(), streams, "{name}");
        assert_eq!(s.iter().map(|i| i.requests.len()).sum::<usize>(), requests);
        assert_eq!(s[0].shared_prefix, shared, "{name}");
        assert!(s.iter().all(|i| i.ttl == Some(Ttl::FiveMinutes)));
    }
}

#[test]
fn broken_records_are_counted_never_fatal() {
    let text = [
        "",
        "{\"type\":\"assistant\"}",
        "{\"type\":\"assistant\",\"timestamp\":\"2025-01-01T00:00:00Z\"}",
        "{\"type\":\"assistant\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"requestId\":\"r\",\"message\":{\"content\":7}}",
        "{\"type\":\"user\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"message\":{\"content\":{\"a\":1}}}",
        "[1,2,3]",
        "\u{0}\u{1}binary",
        "{\"type\":\"user\",\"timestamp\":\"not a time\",\"message\":{\"content\":\"hi\"}}",
    ]
    .join("\n");
    let t = plancache::import::claude_code::parse(&text);
    // Every non-empty line is a skipped record: 7 of them; no request survives.
    assert_eq!(t.skipped.len(), 7, "{:?}", t.skipped);
    assert!(build_scenarios(&t, &ImportOptions::default()).is_empty());
}

#[test]
fn codex_rollouts_map_cached_input_to_cache_reads() {
    let t = Harness::Codex
        .read(&fixture("codex_rollout.jsonl"))
        .expect("readable");
    let reqs: Vec<_> = t.streams[0].requests().collect();
    assert_eq!(reqs.len(), 2);
    // 9100 input of which 8960 cached (70 x 128): read 8960, uncached 140, no creation.
    assert_eq!(reqs[1].usage.cache_read_input_tokens, 8960);
    assert_eq!(reqs[1].usage.input_tokens, 140);
    assert_eq!(reqs[1].usage.prompt_tokens(), 9100);
    assert_eq!(reqs[0].model, "gpt-5-codex");
    // The `compacted` record after the last request is a compaction item: nothing is skipped.
    assert!(t.skipped.is_empty(), "{:?}", t.skipped);
    let s = build_scenarios(&t, &ImportOptions::default());
    assert_eq!(replayed_prompts_codex(&s[0]), vec![9000, 9100]);
}

fn replayed_prompts_codex(imp: &ImportedScenario) -> Vec<u64> {
    // gpt-5-codex is not in the bundled price table, so the engine would refuse to price it:
    // add up the scenario's sizes as the engine builds prompts (static + conversation so far).
    let mut total = Vec::new();
    let mut conv = 0u64;
    let sys = match &imp.scenario.system {
        plancache::scenario::Blocks::One(c) => c.tokens.unwrap_or(0) as u64,
        plancache::scenario::Blocks::Many(v) => {
            v.iter().map(|c| c.tokens.unwrap_or(0) as u64).sum()
        }
    };
    for st in &imp.scenario.steps {
        match st {
            Step::User(plancache::scenario::TextOrContent::Content(c)) => {
                conv += c.tokens.unwrap_or(0) as u64
            }
            Step::Assistant(turn) => {
                total.push(sys + conv);
                conv += turn.tokens.unwrap_or(0) as u64;
                conv += turn
                    .calls
                    .iter()
                    .map(|c| c.result_tokens.unwrap_or(0) as u64)
                    .sum::<u64>();
            }
            _ => {}
        }
    }
    total
}

#[test]
fn the_cli_writes_one_scenario_per_stream_and_rejects_bad_input() {
    use std::process::Command;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("s.toml");
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_plancache"))
            .args(args)
            .output()
            .expect("runs")
    };
    let o = run(&[
        "import".as_ref(),
        "claude-code".as_ref(),
        fixture("sidechains.jsonl").as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "s.toml",
        "s.agent-1.toml",
        "s.agent-2.toml",
        "s.agent-3.toml",
    ] {
        let p = dir.path().join(f);
        let text = std::fs::read_to_string(&p).expect(f);
        load_str(&text, &p).expect("each written scenario loads");
    }
    // A file with no request in it, an unknown kind, a missing file: exit 2 with the reason.
    let o = run(&[
        "import".as_ref(),
        "claude-code".as_ref(),
        fixture("NOTICE.md").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no API request"));
    let o = run(&[
        "import".as_ref(),
        "cursor".as_ref(),
        fixture("breaks.jsonl").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("known kinds: claude-code, codex"));
    let o = run(&["validate".as_ref(), "missing.jsonl".as_ref()]);
    assert_eq!(o.status.code(), Some(2));
    // validate writes both files.
    let vdir = dir.path().join("v");
    let o = run(&[
        "validate".as_ref(),
        fixture("plan_mode.jsonl").as_os_str(),
        "--out".as_ref(),
        vdir.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(vdir.join("validation.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 1 + 7);
    assert!(vdir.join("validation.md").exists());
}

#[test]
fn unanswered_or_repeated_plan_calls_do_not_stop_the_replay() {
    // EnterPlanMode answered (enters plan), EnterPlanMode again while in plan (left out), then an
    // ExitPlanMode the log never answers (left out): the scenario still replays to the end.
    let rec = |line: &str| line.to_string();
    let text = [
        rec(r#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"timestamp":"2025-10-01T10:00:00Z","message":{"role":"user","content":"plan it"}}"#),
        rec(r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","isSidechain":false,"timestamp":"2025-10-01T10:00:02Z","requestId":"r1","message":{"model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"EnterPlanMode","input":{}}],"usage":{"input_tokens":3,"cache_creation_input_tokens":5000,"cache_read_input_tokens":0}}}"#),
        rec(r#"{"type":"user","uuid":"u2","parentUuid":"a1","isSidechain":false,"timestamp":"2025-10-01T10:00:05Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Entered plan mode"}]}}"#),
        rec(r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","isSidechain":false,"timestamp":"2025-10-01T10:00:07Z","requestId":"r2","message":{"model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t2","name":"EnterPlanMode","input":{}}],"usage":{"input_tokens":3,"cache_creation_input_tokens":40,"cache_read_input_tokens":5000}}}"#),
        rec(r#"{"type":"user","uuid":"u3","parentUuid":"a2","isSidechain":false,"timestamp":"2025-10-01T10:00:08Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"Already in plan mode","is_error":true}]}}"#),
        rec(r#"{"type":"assistant","uuid":"a3","parentUuid":"u3","isSidechain":false,"timestamp":"2025-10-01T10:00:10Z","requestId":"r3","message":{"model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t3","name":"ExitPlanMode","input":{"plan":"do it"}}],"usage":{"input_tokens":3,"cache_creation_input_tokens":30,"cache_read_input_tokens":5040}}}"#),
    ]
    .join("\n");
    let mut t = plancache::import::claude_code::parse(&text);
    t.name = "inline".into();
    let s = build_scenarios(&t, &ImportOptions::default());
    assert_eq!(s[0].notes.len(), 2, "{:?}", s[0].notes);
    assert_eq!(replayed_prompts(&s[0]), vec![5003, 5043, 5073]);
}
