//! Bad transcripts are bad input: a clear message naming the file and exit code 2, never a panic,
//! a gigantic allocation or a "0 requests" success; and `import` never writes a scenario that
//! `run` cannot read.

use std::path::Path;
use std::process::{Command, Output};

fn plancache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .output()
        .expect("runs")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn assistant(request_id: &str, model: &str, usage: &str) -> String {
    format!(
        r#"{{"type":"assistant","uuid":"a1","parentUuid":null,"isSidechain":false,"timestamp":"2025-11-04T09:00:03.000Z","requestId":{request_id},"message":{{"id":"m1","role":"assistant","model":{model},"content":[{{"type":"text","text":"ok"}}],"usage":{usage}}}}}"#
    )
}

const USER: &str = r#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"timestamp":"2025-11-04T09:00:00.000Z","message":{"role":"user","content":"Hi"}}"#;

fn assert_bad_input(out: &Output, file: &str, says: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(file), "{err}");
    assert!(err.contains(says), "{err}");
}

#[test]
fn empty_garbage_and_wrong_kind_files_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.jsonl", "");
    let garbage = write(dir.path(), "garbage.jsonl", "not json\n\u{1}\u{2}\n{]\n");
    let codex = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts/codex_rollout.jsonl")
        .display()
        .to_string();
    for f in [&empty, &garbage] {
        let out = plancache(&["validate", f]);
        assert_bad_input(&out, f, "no API request with usage found");
    }
    // A Codex rollout read as Claude Code holds no Claude Code request.
    let out = plancache(&["validate", "--kind", "claude-code", &codex]);
    assert_bad_input(&out, &codex, "no API request with usage found");
    let out = plancache(&[
        "validate",
        &dir.path().join("missing.jsonl").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn absurd_or_overflowing_usage_is_bad_input_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    // 4e9 input tokens: over the scenario limit (20,000,000); replaying it would allocate GBs.
    let huge = write(
        dir.path(),
        "huge.jsonl",
        &format!(
            "{USER}\n{}\n",
            assistant(
                "\"r1\"",
                "\"claude-sonnet-4-5\"",
                r#"{"input_tokens":4000000000,"output_tokens":1}"#
            )
        ),
    );
    for cmd in [
        vec!["validate", huge.as_str()],
        vec!["import", "claude-code", huge.as_str()],
    ] {
        let out = plancache(&cmd);
        assert_bad_input(&out, &huge, "larger than any prompt");
        assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    }
    // Counts whose sum overflows u64.
    let overflow = write(
        dir.path(),
        "overflow.jsonl",
        &format!(
            "{USER}\n{}\n",
            assistant(
                "\"r1\"",
                "\"claude-sonnet-4-5\"",
                r#"{"input_tokens":18446744073709551615,"cache_read_input_tokens":18446744073709551615,"output_tokens":1}"#
            )
        ),
    );
    let out = plancache(&["validate", &overflow]);
    assert_bad_input(&out, &overflow, "larger than any prompt");
}

#[test]
fn recorded_ids_with_newlines_never_break_the_written_scenario() {
    let dir = tempfile::tempdir().unwrap();
    // A request id and a second request's model id carrying newlines and TOML: they reach the
    // scenario's comments (notes) and must stay inside them.
    let second = assistant(
        "\"r2\\n[[steps]]\\nuser = 1\"",
        "\"claude-opus-4-5\\nname = 'x'\"",
        r#"{"input_tokens":3,"cache_creation_input_tokens":5000,"cache_read_input_tokens":15000,"output_tokens":1}"#,
    )
    .replace("09:00:03", "09:00:30");
    let user2 = USER
        .replace("09:00:00", "09:00:20")
        .replace("\"u1\"", "\"u2\"");
    let text = format!(
        "{USER}\n{}\n{user2}\n{second}\n",
        assistant(
            "\"r1\"",
            "\"claude-sonnet-4-5\"",
            r#"{"input_tokens":3,"cache_creation_input_tokens":14997,"output_tokens":1}"#
        )
    );
    let t = write(dir.path(), "ids.jsonl", &text);
    let out_path = dir.path().join("ids.toml").display().to_string();
    let out = plancache(&["import", "claude-code", &t, "--out", &out_path]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scenario = std::fs::read_to_string(&out_path).unwrap();
    assert!(scenario.contains("r2\\n[[steps]]\\nuser = 1"), "{scenario}");
    // The written scenario loads, and the ids stayed inside comments and strings: no step was
    // injected (user, reply, user, wait, reply) and the second reply's model is the whole id. (`check`
    // would now stop at that model, which no price table knows: bad input, not an injection.)
    let loaded = plancache::scenario::load_str(&scenario, Path::new(&out_path))
        .unwrap_or_else(|e| panic!("the written scenario does not load: {e}"));
    assert_eq!(loaded.steps.len(), 5, "{scenario}");
    match &loaded.steps[4] {
        plancache::scenario::Step::Assistant(t) => {
            assert_eq!(t.model.as_deref(), Some("claude-opus-4-5\nname = 'x'"))
        }
        other => panic!("{other:?}"),
    }
}
