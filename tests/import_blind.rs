//! `--events transcript` never reads the billed cache amounts: the scenarios it builds are the
//! same whatever `cache_read_input_tokens`, `cache_creation_input_tokens` and the amounts of the
//! TTL split `cache_creation.ephemeral_5m/1h_input_tokens` say. Of the split it uses only the
//! class each stream was billed at (`--ttl auto`: a request-side setting the bill reveals), so the
//! blinded copy keeps that class and nothing else.

use std::path::Path;

use plancache::engine::ReplayEnv;
use plancache::import::{build_scenarios, claude_code, Events, ImportOptions};
use plancache::validate::{validate, ValidateOptions};
use serde_json::Value;

/// The TTL class most of a transcript's written tokens were billed at ("5m" or "1h").
fn class_of(text: &str) -> Option<&'static str> {
    let (mut five, mut hour) = (0u64, 0u64);
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let n = |k: &str| {
            v.pointer(&format!("/message/usage/cache_creation/{k}"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        five += n("ephemeral_5m_input_tokens");
        hour += n("ephemeral_1h_input_tokens");
    }
    match (five, hour) {
        (0, 0) => None,
        (f, h) if h > f => Some("ephemeral_1h_input_tokens"),
        _ => Some("ephemeral_5m_input_tokens"),
    }
}

/// The transcript with every request's cache amounts zeroed: the whole prompt moves into
/// `input_tokens` (prompt sizes stay what the harness sent, which transcript mode may use). Only
/// the TTL class survives: a request that wrote keeps one token written, of the class the
/// transcript was billed at, so every stream's class is what it was and no amount is.
fn blinded(text: &str) -> String {
    let class = class_of(text);
    let mut out = String::new();
    for line in text.lines() {
        let Ok(mut v) = serde_json::from_str::<Value>(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if let Some(u) = v.pointer_mut("/message/usage") {
            let get = |u: &Value, k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            let total = get(u, "input_tokens")
                + get(u, "cache_creation_input_tokens")
                + get(u, "cache_read_input_tokens");
            let wrote = get(u, "cache_creation_input_tokens") > 0;
            let keep = u64::from(wrote && class.is_some() && u.get("cache_creation").is_some());
            u["input_tokens"] = (total - keep).into();
            u["cache_creation_input_tokens"] = keep.into();
            u["cache_read_input_tokens"] = 0.into();
            if let Some(split) = u.get_mut("cache_creation") {
                for k in ["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"] {
                    if split.get(k).is_some() || Some(k) == class {
                        split[k] = if Some(k) == class { keep } else { 0 }.into();
                    }
                }
            }
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

fn scenarios(text: &str, events: Events) -> Vec<String> {
    let t = claude_code::parse(text);
    let opts = ImportOptions {
        events,
        ..ImportOptions::default()
    };
    build_scenarios(&t, &opts)
        .iter()
        .map(|s| s.to_toml("fixture").unwrap())
        .collect()
}

/// What a transcript-mode validation predicts per request (prompt, input, creation, read, break
/// verdict against the predicted previous prompt) and the events it recognised: the whole
/// replay, timeline and TTLs included, not only the scenario text.
fn predictions(text: &str) -> Vec<(u64, u64, u64, u64, String)> {
    let mut t = claude_code::parse(text);
    t.name = "fixture".into();
    let v = validate(&[t], &ValidateOptions::default(), &ReplayEnv::default()).unwrap();
    v.checks
        .iter()
        .map(|c| {
            (
                c.predicted_prompt,
                c.predicted_input,
                c.predicted_creation,
                c.predicted_read,
                format!("{} {}", c.predicted_break, c.events),
            )
        })
        .collect()
}

#[test]
fn transcript_mode_scenarios_do_not_change_when_the_cache_counters_are_zeroed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl") && !p.ends_with("codex_rollout.jsonl")
        })
        .collect();
    files.extend(
        [
            "s1.jsonl",
            "s1/subagents/agent-a1f.jsonl",
            "s1/subagents/agent-b2e.jsonl",
        ]
        .map(|f| dir.join("projects/-repo").join(f)),
    );
    files.push(dir.join("events/quiet/subagents/agent-a4f2c9e.jsonl"));
    files.extend(
        std::fs::read_dir(dir.join("events"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl")),
    );
    files.sort();
    assert!(files.len() >= 21, "{files:?}");
    let mut billed_differs = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let blind = blinded(&text);
        assert_ne!(text, blind, "{}: nothing was zeroed", f.display());
        let a = scenarios(&text, Events::Transcript);
        assert!(!a.is_empty(), "{}", f.display());
        assert_eq!(a, scenarios(&blind, Events::Transcript), "{}", f.display());
        assert_eq!(predictions(&text), predictions(&blind), "{}", f.display());
        if scenarios(&text, Events::Billed) != scenarios(&blind, Events::Billed) {
            billed_differs += 1;
        }
    }
    // The check has teeth: `billed` mode does read the counters, and its scenarios change.
    assert!(billed_differs >= 3, "{billed_differs}");
}
