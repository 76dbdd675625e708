//! Codex CLI rollouts: one request per model call although every `token_count` event is written
//! twice, compactions that keep the instructions prefix, and the bundled price table covering the
//! Codex models, so a rollout validates without a pricing file.
//!
//! `tests/fixtures/codex/codex_doubled.jsonl` was written by hand from the record shapes of Codex CLI 0.98
//! (`session_meta`, `turn_context`, `response_item`, `event_msg` `token_count` written twice with
//! an identical `total_token_usage`, `compacted`). Its usage is what OpenAI's automatic cache
//! bills (CACHE_SEMANTICS O2 and §8): `cached_input_tokens` is the longest cached prefix in whole
//! 128-token units; the previous visible reply is cached with its prompt, but after reasoning
//! tokens the next prompt departs where the reply began (reasoning is not repeated).

use std::path::PathBuf;

use plancache::engine::ReplayEnv;
use plancache::import::{build_scenarios, codex, Events, Harness, ImportOptions, Item};
use plancache::scenario::{Blocks, Step};
use plancache::validate::{validate, FirstRequest, ValidateOptions};

/// The fixtures: `codex_rollout.jsonl` beside the Claude Code transcripts, the rest in
/// `tests/fixtures/codex/`.
fn fixture(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let codex = root.join("codex").join(name);
    if codex.exists() {
        codex
    } else {
        root.join("transcripts").join(name)
    }
}

#[test]
fn doubled_token_count_events_give_one_request_per_model_call() {
    let path = fixture("codex_doubled.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    // 6 model calls, each logged as two `token_count` events with usage, plus one
    // rate-limit-only event (`info: null`): 13 events in all.
    assert_eq!(text.matches("\"type\":\"token_count\"").count(), 13);
    let t = Harness::Codex.read(&path).expect("readable");
    assert!(t.skipped.is_empty(), "{:?}", t.skipped);
    let reqs: Vec<_> = t.streams[0].requests().collect();
    assert_eq!(reqs.len(), 6, "one request per model call, not per event");
    // (prompt, cached) as billed (the module comment of `import::codex` gives the rule: within a
    // turn the whole previous response, reasoning included, is repeated and cached; a new user
    // turn drops the last turn's reasoning):
    // 1: cold 9,200.
    // 2: 9,881, same turn: 9,200 + 156 output (128 reasoning + 28 visible) = 9,356 -> 73 x 128
    //    = 9,344.
    // 3: 10,565, same turn: 9,881 + 26 = 9,907 -> 77 x 128 = 9,856.
    // 4: 10,612, a new user turn: the turn began at call 1's prompt, 9,200 -> 71 x 128 = 9,088.
    // 5: after the compaction, 9,262; the instructions prefix (9,185) -> 71 x 128 = 9,088.
    // 6: 9,731; 9,262 + 21 visible = 9,283 -> 72 x 128 = 9,216.
    let got: Vec<(u64, u64)> = reqs
        .iter()
        .map(|r| (r.usage.prompt_tokens(), r.usage.cache_read_input_tokens))
        .collect();
    assert_eq!(
        got,
        vec![
            (9_200, 0),
            (9_881, 9_344),
            (10_565, 9_856),
            (10_612, 9_088),
            (9_262, 9_088),
            (9_731, 9_216)
        ]
    );
    // Output is billed whole (reasoning included): call 1 = 128 reasoning + 28 visible.
    assert_eq!(reqs[0].usage.output_tokens, 156);
    let reasoning: Vec<u64> = reqs.iter().map(|r| r.usage.reasoning_tokens).collect();
    assert_eq!(reasoning, vec![128, 0, 64, 0, 0, 0]);
    // The replayed turns carry it as output the next prompt does not repeat only where the turn
    // ends: within a turn (calls 1 and 3 are followed by calls of their turn) it is part of the
    // reply the next prompt repeats.
    let s = build_scenarios(&t, &ImportOptions::default());
    let turns: Vec<u32> = s[0]
        .scenario
        .steps
        .iter()
        .filter_map(|st| match st {
            Step::Assistant(turn) => Some(turn.reasoning_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(turns, vec![0, 0, 64, 0, 0, 0]);
    assert!(reqs.iter().all(|r| r.model == "gpt-5.3-codex"));
    assert!(reqs
        .iter()
        .all(|r| r.usage.cache_read_input_tokens % 128 == 0));
}

#[test]
fn an_event_with_a_new_total_is_a_new_call_even_with_equal_last_usage() {
    // Two model calls with identical per-call usage differ in their running totals: both count.
    // The repeated copy of the second one does not.
    let line = |t: &str, total: u64| {
        format!(
            r#"{{"timestamp":"2026-03-12T10:00:{t}Z","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total},"cached_input_tokens":0,"output_tokens":0}},"last_token_usage":{{"input_tokens":2000,"cached_input_tokens":0,"output_tokens":0}}}}}}}}"#
        )
    };
    let text = [
        line("01.000", 2000),
        line("01.001", 2000),
        line("05.000", 4000),
        line("05.001", 4000),
    ]
    .join("\n");
    let t = codex::parse(&text);
    assert_eq!(t.streams[0].requests().count(), 2);
}

#[test]
fn a_history_compaction_keeps_the_instructions_prefix() {
    let t = Harness::Codex
        .read(&fixture("codex_doubled.jsonl"))
        .expect("readable");
    let items = &t.streams[0].items;
    let k = items
        .iter()
        .position(|i| matches!(i, Item::Compaction { .. }))
        .expect("the `compacted` record is a compaction");
    let Item::Compaction { summary, .. } = &items[k] else {
        unreachable!()
    };
    assert!(summary.starts_with("Summary: the flaky test"));
    // It falls between the 4th and the 5th request.
    let before = items[..k]
        .iter()
        .filter(|i| matches!(i, Item::Request(_)))
        .count();
    assert_eq!(before, 4);
    let s = build_scenarios(&t, &ImportOptions::default());
    assert_eq!(s.len(), 1);
    assert!(s[0]
        .scenario
        .steps
        .iter()
        .any(|st| matches!(st, Step::Compact(_))));
}

#[test]
fn the_first_read_splits_the_static_prefix_only_in_billed_mode() {
    // A first request that read 7,936 (62 x 128) of an 8,400-token prompt: an earlier session
    // wrote the shared instructions + tools prefix, 7,936 tokens in whole units. `billed` mode
    // splits the static block there (7,936 + 464); `transcript` mode never reads it (8,400).
    let text = r#"{"timestamp":"2026-03-12T10:00:00Z","type":"turn_context","payload":{"model":"gpt-5.4"}}
{"timestamp":"2026-03-12T10:00:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":8400},"last_token_usage":{"input_tokens":8400,"cached_input_tokens":7936,"output_tokens":10}}}}"#;
    let t = codex::parse(text);
    let system = |events| {
        let opts = ImportOptions {
            events,
            ..ImportOptions::default()
        };
        match &build_scenarios(&t, &opts)[0].scenario.system {
            Blocks::One(c) => vec![c.tokens.unwrap_or(0)],
            Blocks::Many(v) => v.iter().map(|c| c.tokens.unwrap_or(0)).collect(),
        }
    };
    assert_eq!(system(Events::Billed), vec![7_936, 464]);
    assert_eq!(system(Events::Transcript), vec![8_400]);
}

/// The bundled Codex fixtures validate with the bundled price table (no `--pricing`), and the
/// predicted `cached_tokens` lie within one 128-token unit of the billed ones on at least 90%
/// of the requests (issue 10's target for Codex).
#[test]
fn codex_fixtures_validate_without_a_pricing_file_within_one_block() {
    let transcripts: Vec<_> = ["codex_doubled.jsonl", "codex_rollout.jsonl"]
        .iter()
        .map(|n| Harness::Codex.read(&fixture(n)).expect("readable"))
        .collect();
    let opts = ValidateOptions {
        cache: "openai".into(),
        first_request: FirstRequest::Include,
        ..ValidateOptions::default()
    };
    let v = validate(&transcripts, &opts, &ReplayEnv::default()).expect("validates");
    assert_eq!(v.checks.len(), 8);
    let within = v
        .checks
        .iter()
        .filter(|c| c.predicted_read.abs_diff(c.recorded_read) <= 128)
        .count();
    assert!(
        within * 10 >= v.checks.len() * 9,
        "{within} of {} within one 128-token unit",
        v.checks.len()
    );
    // Every prompt is replayed at its recorded size.
    assert!(v
        .checks
        .iter()
        .all(|c| c.predicted_prompt == c.recorded_prompt));
}

#[test]
fn the_request_count_does_not_depend_on_billed_cache_counts() {
    // Zeroing every cached count of the rollout leaves the same model calls and the same
    // scenario: cache figures decide nothing the replay uses.
    let path = fixture("codex_doubled.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let zeroed: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if let Some(info) = v.pointer_mut("/payload/info").filter(|i| i.is_object()) {
                for k in ["total_token_usage", "last_token_usage"] {
                    if let Some(u) = info.get_mut(k) {
                        u["cached_input_tokens"] = 0.into();
                    }
                }
            }
            v.to_string() + "\n"
        })
        .collect();
    let a = codex::parse(&text);
    let b = codex::parse(&zeroed);
    assert_eq!(
        a.streams[0].requests().count(),
        b.streams[0].requests().count()
    );
    let lines = |t: &plancache::import::Transcript| -> Vec<usize> {
        t.streams[0].requests().map(|r| r.line).collect()
    };
    assert_eq!(lines(&a), lines(&b));
    // In the default `transcript` events mode the scenarios are byte-identical.
    let toml = |t: &plancache::import::Transcript| -> Vec<String> {
        let opts = ImportOptions {
            events: Events::Transcript,
            ..ImportOptions::default()
        };
        build_scenarios(t, &opts)
            .iter()
            .map(|s| s.to_toml("fixture").unwrap())
            .collect()
    };
    assert_eq!(toml(&a), toml(&b));
}

#[test]
fn the_cli_imports_one_request_per_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(["import", "codex"])
        .arg(fixture("codex_doubled.jsonl"))
        .arg("--out")
        .arg(dir.path().join("s.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("6 requests"), "{said}");
    let scenario = std::fs::read_to_string(dir.path().join("s.toml")).unwrap();
    // One assistant step per model call.
    assert_eq!(scenario.matches("\n[steps.assistant]\n").count(), 6);
}
