//! `validate` over several sessions: one account cache on one clock (`--sessions account`), a
//! cache per transcript (`--sessions apart`), and a folder run that keeps going past a session it
//! cannot replay.

use std::path::Path;
use std::process::Command;

const FIXTURE: &str = "tests/fixtures/transcripts/events/interrupt.jsonl";

/// The fixture as another session of the same user: its own session id, every timestamp moved
/// `minutes` later.
fn shifted(text: &str, id: &str, minutes: i64) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["sessionId"] = id.into();
        if let Some(ts) = v["timestamp"].as_str() {
            let t: jiff::Timestamp = ts.parse().unwrap();
            let t = t + jiff::SignedDuration::from_mins(minutes);
            v["timestamp"] = t.to_string().into();
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

fn validate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
        .arg("validate")
        .args(args)
        .output()
        .unwrap()
}

/// (stream, request) -> predicted_read, from validation.csv.
fn predicted_reads(csv: &Path) -> Vec<(String, String, u64)> {
    let mut r = csv::Reader::from_path(csv).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (t, req, read) = (col("transcript"), col("request"), col("predicted_read"));
    r.records()
        .map(|x| {
            let x = x.unwrap();
            (
                x[t].to_string(),
                x[req].to_string(),
                x[read].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_session_started_while_an_earlier_one_lives_reads_its_leading_block() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    std::fs::write(dir.path().join("a.jsonl"), shifted(&text, "a", 0)).unwrap();
    // b starts 2 minutes after a's first request: within the 5-minute TTL of a's entries.
    std::fs::write(dir.path().join("b.jsonl"), shifted(&text, "b", 2)).unwrap();
    let d = dir.path().to_str().unwrap();
    let (acc, apart) = (dir.path().join("acc"), dir.path().join("apart"));
    let o = validate(&[d, "--out", acc.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = validate(&[d, "--sessions", "apart", "--out", apart.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let acc = predicted_reads(&acc.join("validation.csv"));
    let apart = predicted_reads(&apart.join("validation.csv"));
    let first = |rows: &[(String, String, u64)], t: &str| {
        rows.iter()
            .find(|(n, r, _)| n.starts_with(t) && r == "1")
            .map(|x| x.2)
            .unwrap()
    };
    // Apart, b's first request finds a cold cache, as a's does; on the account's cache it reads
    // what a wrote 2 minutes earlier (its tools and system at least: more than zero), and a's own
    // figures are the same either way (nothing was sent before it).
    assert_eq!(first(&apart, "b"), 0);
    assert_eq!(first(&apart, "a"), 0);
    assert!(first(&acc, "b") > 0, "{acc:?}");
    let a_rows = |rows: &[(String, String, u64)]| {
        rows.iter()
            .filter(|(n, _, _)| n.starts_with('a'))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(a_rows(&acc), a_rows(&apart));
}

#[test]
fn a_folder_run_scores_the_sessions_it_can_and_names_the_one_it_skips() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    std::fs::write(dir.path().join("good.jsonl"), shifted(&text, "good", 0)).unwrap();
    // Records of the right shape but no request to compare: not a session validate can score.
    std::fs::write(
        dir.path().join("empty.jsonl"),
        "{\"type\":\"summary\",\"summary\":\"nothing\",\"leafUuid\":\"x\"}\n",
    )
    .unwrap();
    let o = validate(&[dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("empty.jsonl"), "{err}");
    assert!(err.contains("1 session(s) skipped, 1 scored"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("## Sessions skipped"), "{out}");
    assert!(out.contains("| good"), "{out}");

    // Nothing that can be scored: bad input.
    std::fs::remove_file(dir.path().join("good.jsonl")).unwrap();
    std::fs::write(
        dir.path().join("also-empty.jsonl"),
        "{\"type\":\"summary\"}\n",
    )
    .unwrap();
    let o = validate(&[dir.path().to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
