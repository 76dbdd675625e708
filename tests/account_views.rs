//! `account`'s ccusage-style views on the command line (issue 21 item 5): days in a time zone,
//! 5-hour blocks, `--since/--until`, `--project`, `--json`, thousands separators; inputs read
//! once (issue 19 item 4); a folder run that names the session it skipped and counts the rest
//! (issue 17 item 6). Every expected figure is derived by hand in the comments.

use std::path::Path;
use std::process::{Command, Output};

use plancache::cache::PriceTable;
use serde_json::Value;

fn plancache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// One recorded request: (UTC timestamp, uncached input, cache writes (5 m), cache reads,
/// output).
type Req = (&'static str, u64, u64, u64, u64);

/// A minimal Claude Code session: per request a user record and an assistant record carrying
/// the usage, model claude-sonnet-4-5.
fn session(dir: &Path, project: &str, id: &str, reqs: &[Req]) {
    let folder = dir.join(project);
    std::fs::create_dir_all(&folder).unwrap();
    let mut lines = Vec::new();
    for (k, (at, input, write, read, output)) in reqs.iter().enumerate() {
        let user = serde_json::json!({
            "type": "user", "uuid": format!("{id}-u{k}"), "sessionId": id, "cwd": "/repo",
            "version": "2.0.14", "timestamp": at,
            "message": {"role": "user", "content": format!("question {k}")}
        });
        let assistant = serde_json::json!({
            "type": "assistant", "uuid": format!("{id}-a{k}"), "sessionId": id, "cwd": "/repo",
            "version": "2.0.14", "timestamp": at, "requestId": format!("req_{id}_{k}"),
            "message": {
                "id": format!("msg_{id}_{k}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": format!("answer {k}")}],
                "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                          "cache_read_input_tokens": read, "output_tokens": output}
            }
        });
        lines.push(user.to_string());
        lines.push(assistant.to_string());
    }
    std::fs::write(folder.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
}

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

/// Three sessions over two projects. In Asia/Tokyo (UTC+9, no DST):
/// - s3 (-p-a) 2025-10-01T10:00Z = Oct 1 19:00 JST: input 1, write 300, read 0, output 1;
/// - s1 (-p-a) 2025-10-01T14:30Z = Oct 1 23:30 JST: 100 / 1000 / 0 / 10, and
///   2025-10-01T15:10Z = Oct 2 00:10 JST: 50 / 200 / 1000 / 20;
/// - s2 (-p-b) 2025-10-01T16:00Z = Oct 2 01:00 JST: 10 / 500 / 0 / 5.
///
/// Every request is on Oct 1 in UTC: a UTC-day implementation prints one row.
fn three_sessions(dir: &Path) {
    session(
        dir,
        "-p-a",
        "s3",
        &[("2025-10-01T10:00:00.000Z", 1, 300, 0, 1)],
    );
    session(
        dir,
        "-p-a",
        "s1",
        &[
            ("2025-10-01T14:30:00.000Z", 100, 1000, 0, 10),
            ("2025-10-01T15:10:00.000Z", 50, 200, 1000, 20),
        ],
    );
    session(
        dir,
        "-p-b",
        "s2",
        &[("2025-10-01T16:00:00.000Z", 10, 500, 0, 5)],
    );
}

fn tokens(v: &Value) -> [u64; 5] {
    [
        "inputTokens",
        "outputTokens",
        "cacheCreationTokens",
        "cacheReadTokens",
        "totalTokens",
    ]
    .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")))
}

#[test]
fn days_are_counted_in_the_time_zone_given() {
    let tmp = tempfile::tempdir().unwrap();
    three_sessions(tmp.path());
    let dir = tmp.path().to_str().unwrap();
    let v = json_of(&plancache(&[
        "account",
        "daily",
        dir,
        "--billed-only",
        "--json",
        "-z",
        "Asia/Tokyo",
    ]));
    let days = v["daily"].as_array().unwrap();
    assert_eq!(days.len(), 2, "{v}");
    // Oct 1 JST: s3 + s1's first request: input 1 + 100 = 101, output 1 + 10 = 11, writes
    // 300 + 1000 = 1300, reads 0, total 1412; two sessions.
    assert_eq!(days[0]["date"], "2025-10-01");
    assert_eq!(tokens(&days[0]), [101, 11, 1300, 0, 1412]);
    assert_eq!(days[0]["sessions"], 2);
    // Oct 2 JST: s1's second request + s2: input 60, output 25, writes 700, reads 1000,
    // total 1785; two sessions (s1 counts in both days).
    assert_eq!(days[1]["date"], "2025-10-02");
    assert_eq!(tokens(&days[1]), [60, 25, 700, 1000, 1785]);
    assert_eq!(days[1]["sessions"], 2);
    // Cost of Oct 1 at claude-sonnet-4-5's bundled prices: (101 + 1300 × 5 m write multiplier)
    // × input price + 11 × output price.
    let p = PriceTable::bundled();
    let m = p.get("claude-sonnet-4-5").unwrap();
    let want = (101.0 + 1300.0 * m.write_5m) * m.input / 1e6 + 11.0 * m.output / 1e6;
    let got = days[0]["totalCost"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    // The same folder in UTC: one day holding everything (1412 + 1785 = 3197 tokens).
    let utc = json_of(&plancache(&[
        "account",
        dir,
        "--billed-only",
        "--json",
        "--timezone",
        "UTC",
    ]));
    assert_eq!(utc["daily"].as_array().unwrap().len(), 1);
    assert_eq!(utc["totals"]["totalTokens"], 3197);

    // --since/--until in the zone, both spellings: only Oct 2 JST.
    let win = json_of(&plancache(&[
        "account",
        dir,
        "--billed-only",
        "--json",
        "-z",
        "Asia/Tokyo",
        "--since",
        "2025-10-02",
        "--until",
        "20251002",
    ]));
    assert_eq!(tokens(&win["totals"]), [60, 25, 700, 1000, 1785]);
    // --project: s2 alone (10 + 5 + 500 = 515 tokens).
    let proj = json_of(&plancache(&[
        "account",
        "session",
        dir,
        "--billed-only",
        "--json",
        "--project",
        "-p-b",
    ]));
    let rows = proj["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["sessionId"], "s2");
    assert_eq!(tokens(&rows[0]), [10, 5, 500, 0, 515]);
    // Monthly and weekly: Oct 2025 in both; 2025-10-01 is a Wednesday, so with Sunday weeks
    // every request is in the week of 2025-09-28.
    let wk = json_of(&plancache(&[
        "account",
        "weekly",
        dir,
        "--billed-only",
        "--json",
        "-z",
        "Asia/Tokyo",
    ]));
    assert_eq!(wk["weekly"][0]["week"], "2025-09-28");
    assert_eq!(wk["weekly"].as_array().unwrap().len(), 1);
}

#[test]
fn blocks_last_five_hours_from_the_hour_of_their_first_request() {
    let tmp = tempfile::tempdir().unwrap();
    // 09:10 opens a block at 09:00 (until 14:00); 13:55 is inside it; 14:05 is at or past
    // 14:00: a new block at 14:00; 19:30 is 5 h 25 m after 14:05 (and past 19:00): a new block
    // at 19:00. Tokens per request: 1+10+100+1 = 112, 2+20+200+2 = 224, 4+40+400+4 = 448,
    // 8+80+800+8 = 896; block 1 holds the first two: 112 + 224 = 336; block 2: 448; block 3: 896.
    session(
        tmp.path(),
        "-p",
        "b",
        &[
            ("2025-10-01T09:10:00.000Z", 1, 10, 100, 1),
            ("2025-10-01T13:55:00.000Z", 2, 20, 200, 2),
            ("2025-10-01T14:05:00.000Z", 4, 40, 400, 4),
            ("2025-10-01T19:30:00.000Z", 8, 80, 800, 8),
        ],
    );
    let dir = tmp.path().to_str().unwrap();
    let v = json_of(&plancache(&[
        "account",
        "blocks",
        dir,
        "--billed-only",
        "--json",
        "-z",
        "UTC",
    ]));
    let blocks = v["blocks"].as_array().unwrap();
    let starts: Vec<&str> = blocks
        .iter()
        .map(|b| b["startTime"].as_str().unwrap())
        .collect();
    assert_eq!(
        starts,
        ["2025-10-01 09:00", "2025-10-01 14:00", "2025-10-01 19:00"]
    );
    let totals: Vec<u64> = blocks.iter().map(|b| tokens(b)[4]).collect();
    assert_eq!(totals, [336, 448, 896]);
    assert_eq!(blocks[0]["endTime"], "2025-10-01 14:00");
    // Labels in another zone, same blocks: New York is UTC−4 in October (09:00Z = 05:00).
    let ny = json_of(&plancache(&[
        "account",
        "blocks",
        dir,
        "--billed-only",
        "--json",
        "-z",
        "America/New_York",
    ]));
    assert_eq!(ny["blocks"][0]["startTime"], "2025-10-01 05:00");
    assert_eq!(ny["blocks"].as_array().unwrap().len(), 3);
}

#[test]
fn the_table_has_thousands_separators_and_no_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    // 1,234,567 cache reads in one request: total 1 + 1 + 0 + 1,234,567 = 1,234,569.
    session(
        tmp.path(),
        "-p",
        "big",
        &[("2025-10-01T09:10:00.000Z", 1, 0, 1_234_567, 1)],
    );
    let o = plancache(&[
        "account",
        tmp.path().to_str().unwrap(),
        "--billed-only",
        "-z",
        "UTC",
    ]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("1,234,567") && out.contains("1,234,569"),
        "{out}"
    );
    assert!(out.contains("│ 2025-10-01"), "{out}");
    assert!(
        !out.contains("| ---") && !out.contains("##") && !out.contains(".svg"),
        "{out}"
    );
}

#[test]
fn overlapping_inputs_count_each_session_once() {
    let tmp = tempfile::tempdir().unwrap();
    three_sessions(tmp.path());
    let dir = tmp.path().to_str().unwrap();
    let s1 = tmp.path().join("-p-a/s1.jsonl");
    let once = json_of(&plancache(&[
        "account",
        dir,
        "--billed-only",
        "--json",
        "-z",
        "UTC",
    ]));
    // 3 sessions, 3197 tokens (see `three_sessions`).
    assert_eq!(once["totals"]["totalTokens"], 3197);
    for args in [
        vec![dir, dir],
        vec![dir, s1.to_str().unwrap()],
        vec![s1.to_str().unwrap(), dir],
    ] {
        let mut a = vec!["account", "session"];
        a.extend(args.iter().copied());
        a.extend(["--billed-only", "--json", "-z", "UTC"]);
        let v = json_of(&plancache(&a));
        assert_eq!(v["sessions"].as_array().unwrap().len(), 3, "{args:?}");
        assert_eq!(v["totals"]["totalTokens"], 3197, "{args:?}");
    }
    // The same session id in a second folder (a backup copy) counts once too.
    let copy = tmp.path().join("backup");
    std::fs::create_dir_all(copy.join("-p-a")).unwrap();
    std::fs::copy(&s1, copy.join("-p-a/s1.jsonl")).unwrap();
    let v = json_of(&plancache(&[
        "account",
        tmp.path().join("-p-a").to_str().unwrap(),
        copy.to_str().unwrap(),
        "--billed-only",
        "--json",
        "-z",
        "UTC",
    ]));
    // s3 + s1 once: 1+1+300 = 302 and 100+10+1000 + 50+20+200+1000 = 2380: 2682.
    assert_eq!(v["totals"]["totalTokens"], 2682);
}

#[test]
fn a_folder_run_names_the_session_it_skips_and_counts_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    three_sessions(tmp.path());
    // A fourth session whose only usage record has an impossible input count (10^15 tokens):
    // its record is on line 2 (line 1 is the user record); the replay refuses its size.
    session(
        tmp.path(),
        "-p-c",
        "bad",
        &[("2025-10-01T12:00:00.000Z", 1_000_000_000_000_000, 0, 0, 1)],
    );
    let dir = tmp.path().to_str().unwrap();
    let o = plancache(&[
        "account",
        dir,
        "--json",
        "-z",
        "UTC",
        "--strategies",
        "none",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let bad = tmp.path().join("-p-c/bad.jsonl");
    assert!(err.contains(&format!("{}:2:", bad.display())), "{err}");
    assert!(err.contains("limit"), "{err}");
    assert!(err.contains("1 of 4 sessions"), "{err}");
    // The other three are counted: 3197 tokens billed.
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["totals"]["totalTokens"], 3197);
    assert_eq!(v["notCounted"].as_array().unwrap().len(), 1);

    // Nothing readable: only the bad session, or only a file with no usage record: exit 2.
    let only_bad = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(only_bad.path().join("-p-c")).unwrap();
    std::fs::copy(&bad, only_bad.path().join("-p-c/bad.jsonl")).unwrap();
    let o = plancache(&[
        "account",
        only_bad.path().to_str().unwrap(),
        "--strategies",
        "none",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no session could be replayed") && err.contains("bad.jsonl:2:"));
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(empty.path().join("-p")).unwrap();
    std::fs::write(
        empty.path().join("-p/junk.jsonl"),
        "not json\n{\"type\":\"summary\"}\n",
    )
    .unwrap();
    let o = plancache(&["account", empty.path().to_str().unwrap(), "--billed-only"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("junk.jsonl"));
}

#[test]
fn a_codex_session_is_grouped_by_its_working_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let day = tmp.path().join("2025/10/01");
    std::fs::create_dir_all(&day).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts/codex_rollout.jsonl");
    std::fs::copy(fixture, day.join("rollout-x.jsonl")).unwrap();
    let v = json_of(&plancache(&[
        "account",
        "session",
        tmp.path().to_str().unwrap(),
        "--billed-only",
        "--json",
    ]));
    // Its session_meta says cwd "/repo": the project is "-repo" (Claude Code's spelling of
    // that folder), not the date folder "2025/10/01".
    assert_eq!(v["sessions"][0]["projects"][0], "-repo", "{v}");
}

#[test]
fn bad_flags_are_named_with_an_example() {
    for (args, says) in [
        (vec!["--since", "2025-13-01"], "--since `2025-13-01`"),
        (vec!["--timezone", "Mars/Olympus"], "IANA"),
        (
            vec!["--since", "20251002", "--until", "20251001"],
            "is after",
        ),
    ] {
        let mut a = vec!["account", "tests/fixtures/transcripts/breaks.jsonl"];
        a.extend(args);
        let o = Command::new(env!("CARGO_BIN_EXE_plancache"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&a)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{a:?}");
    }
}

/// `--billed-only` reads Claude Code files with a streaming reader that parses only lines with
/// `"usage"`: on every bundled session (real and hand-made) it bills exactly what the importer
/// bills, request for request (time, model, usage) and in total.
#[test]
fn the_streaming_usage_reader_bills_what_the_importer_bills() {
    use plancache::account::{billed, load};
    use plancache::import::discover;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let prices = PriceTable::bundled();
    let mut checked = 0;
    for dir in ["real/claude-code", "transcripts"] {
        for s in discover::discover(&root.join(dir)).expect("discovers") {
            if s.kind != discover::TranscriptKind::ClaudeCode {
                continue;
            }
            let (Ok(full), Ok(fast)) = (load::load(&s), load::load_billed(&s)) else {
                continue;
            };
            let key = |t: &plancache::import::Transcript| {
                let mut v: Vec<(u64, String, u64, u64, u64, u64)> = t
                    .streams
                    .iter()
                    .flat_map(|st| st.requests())
                    .map(|r| {
                        let u = r.usage;
                        (
                            r.first_at_ms,
                            r.model.clone(),
                            u.input_tokens,
                            u.cache_creation_input_tokens,
                            u.cache_read_input_tokens,
                            u.output_tokens,
                        )
                    })
                    .collect();
                v.sort();
                v
            };
            assert_eq!(
                key(&full.transcript),
                key(&fast.transcript),
                "{}",
                s.label()
            );
            let cost = |t| -> f64 {
                billed::requests(t, &prices, 0.5)
                    .iter()
                    .map(|q| q.billed.usd + q.output_usd)
                    .sum()
            };
            let (a, b) = (cost(&full.transcript), cost(&fast.transcript));
            assert!((a - b).abs() < 1e-9, "{}: {a} vs {b}", s.label());
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked} sessions compared");
}

/// The billed requests of a Codex transcript, everything the bill and the timeline use.
fn codex_key(t: &plancache::import::Transcript) -> Vec<String> {
    t.streams
        .iter()
        .flat_map(|st| st.requests())
        .map(|r| {
            format!(
                "{} line {} at {} {} {:?}",
                r.request_id, r.line, r.first_at_ms, r.model, r.usage
            )
        })
        .collect()
}

/// `--billed-only` reads Codex rollouts with a streaming reader too (only `token_count`,
/// `turn_context` and the first reply item of each request are parsed): on every bundled
/// rollout it gives the importer's requests exactly (id, line, time, model, usage), and the
/// session's project from its working folder.
#[test]
fn the_streaming_rollout_reader_bills_what_the_importer_bills() {
    use plancache::account::load;
    use plancache::import::discover;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut checked = 0;
    for dir in ["real/codex", "transcripts"] {
        for s in discover::discover(&root.join(dir)).expect("discovers") {
            if s.kind != discover::TranscriptKind::Codex {
                continue;
            }
            let (Ok(full), Ok(fast)) = (load::load(&s), load::load_billed(&s)) else {
                continue;
            };
            let requests = codex_key(&full.transcript);
            assert!(!requests.is_empty(), "{}", s.label());
            assert_eq!(requests, codex_key(&fast.transcript), "{}", s.label());
            assert_eq!(full.files.project, fast.files.project);
            assert_eq!(full.bytes, fast.bytes);
            checked += 1;
        }
    }
    assert!(checked >= 7, "{checked} rollouts compared");
}

/// The corner cases of the rollout reader, beside the importer on one hand-made rollout:
/// a doubled `token_count` (same running total: one request), a `token_count` whose
/// `last_token_usage` is null (no request, but its total is remembered), a tool output (not a
/// reply item: does not time the request), a line that only mentions `token_count` in its
/// text, a broken line, and a model switch.
#[test]
fn the_streaming_rollout_reader_follows_the_importer_on_corner_cases() {
    use plancache::account::usage;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout-2026-01-01T00-00-00-x.jsonl");
    let tc = |t: &str, last: &str, total: &str| {
        format!(
            r#"{{"timestamp":"{t}","type":"event_msg","payload":{{"type":"token_count","info":{{"last_token_usage":{last},"total_token_usage":{total}}}}}}}"#
        )
    };
    let lines = [
        r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"cwd":"/home/u/r"}}"#.to_string(),
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"turn_context","payload":{"model":"gpt-5"}}"#.into(),
        r#"{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"say token_count"}]}}"#.into(),
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"reasoning"}}"#.into(),
        r#"{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}"#.into(),
        tc("2026-01-01T00:00:05Z", r#"{"input_tokens":1000,"cached_input_tokens":0,"output_tokens":10}"#, r#"{"input_tokens":1000,"output_tokens":10}"#),
        tc("2026-01-01T00:00:05Z", r#"{"input_tokens":1000,"cached_input_tokens":0,"output_tokens":10}"#, r#"{"input_tokens":1000,"output_tokens":10}"#),
        r#"{"timestamp":"2026-01-01T00:00:06Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"token_count"}}"#.into(),
        "{not json token_count".into(),
        tc("2026-01-01T00:00:07Z", "null", r#"{"input_tokens":2100,"output_tokens":20}"#),
        r#"{"timestamp":"2026-01-01T00:00:08Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}"#.into(),
        r#"{"timestamp":"2026-01-01T00:00:09Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}}"#.into(),
        tc("2026-01-01T00:00:10Z", r#"{"input_tokens":1100,"cached_input_tokens":1024,"output_tokens":10}"#, r#"{"input_tokens":3200,"cached_input_tokens":1024,"output_tokens":30}"#),
        tc("2026-01-01T00:00:11Z", r#"{"input_tokens":1200,"cached_input_tokens":1024,"output_tokens":5}"#, r#"{"input_tokens":3200,"cached_input_tokens":2048,"output_tokens":30}"#),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let full = plancache::import::Harness::Codex.read(&path).unwrap();
    let fast = usage::read_codex(&path).unwrap();
    // Request 1: timed by the reasoning item (00:00:03), model gpt-5, 1,000 uncached. The
    // doubled event and the null-usage event add none. Request 2 (line 13): timed by the
    // assistant message at 00:00:09 (the tool output at 00:00:06 is no reply item), model
    // gpt-5-codex, 1,100 input of which 1,024 cached. The last event differs from it only in
    // cache counts: a copy.
    let usage = |input, read, output| plancache::import::Usage {
        input_tokens: input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: read,
        creation_5m: None,
        creation_1h: None,
        output_tokens: output,
        reasoning_tokens: 0,
    };
    let t0 = 1_767_225_600_000u64;
    let want = vec![
        format!(
            "turn-1 line 6 at {} gpt-5 {:?}",
            t0 + 3_000,
            usage(1000, 0, 10)
        ),
        format!(
            "turn-2 line 13 at {} gpt-5-codex {:?}",
            t0 + 9_000,
            usage(76, 1024, 10)
        ),
    ];
    assert_eq!(codex_key(&full), want);
    assert_eq!(codex_key(&fast), want);
}
