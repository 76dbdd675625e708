//! The readers: HAR 1.2 and OpenTelemetry JSON, kind detection and `--kind`, and bad input
//! (exit 2 naming the file, the place and a hint).

use std::process::Command;

use plancache::cache::PriceTable;
use plancache::requests::{detect_kind, explain_file, read_log, LogKind};
use serde_json::json;

fn body(user: &str) -> serde_json::Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 100,
           "system": [{"type": "text", "text": "You are terse. ".repeat(400), "cache_control": {"type": "ephemeral"}}],
           "messages": [{"role": "user", "content": user}]})
}

fn har_entry(at: &str, user: &str, read: u64, write: u64) -> serde_json::Value {
    let resp = json!({"type": "message", "usage": {"input_tokens": 5, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": 9}});
    json!({"startedDateTime": at, "time": 900.0,
           "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": [], "postData": {"mimeType": "application/json", "text": body(user).to_string()}},
           "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": resp.to_string()}}})
}

#[test]
fn har_entries_with_offsets_and_ttl() {
    // Two requests 6 minutes apart (the second's time has a +01:00 offset): the 5 min entry
    // on the system block expired, so the replay reads nothing.
    let doc = json!({"log": {"version": "1.2", "entries": [
        har_entry("2026-12-01T10:00:00.000Z", "hi", 0, 1600),
        har_entry("2026-12-01T11:06:00.000+01:00", "hi", 0, 1600),
    ]}});
    let f = tempfile::Builder::new().suffix(".har").tempfile().unwrap();
    std::fs::write(f.path(), doc.to_string()).unwrap();
    assert_eq!(detect_kind(f.path(), &doc.to_string()), Some(LogKind::Har));
    let ex = read_log(f.path(), None).unwrap();
    assert_eq!(
        (
            ex[0].sent_at_ms.unwrap() + 360_000,
            ex[0].sent_at_ms.unwrap() + 900
        ),
        (ex[1].sent_at_ms.unwrap(), ex[0].received_at_ms.unwrap())
    );
    let (_, rows) = explain_file(f.path(), None, &PriceTable::bundled()).unwrap();
    assert_eq!(rows[1].at_ms, 360_000);
    assert_eq!(rows[1].predicted_read, 0);
    assert_eq!(
        rows[1].cause,
        plancache::requests::Cause::TtlExpired {
            gap_ms: 360_000,
            ttl_ms: 300_000
        }
    );
}

#[test]
fn otel_spans_and_claude_code_events() {
    // A GenAI span (input_tokens includes the cache buckets: 1,000 = 10 + 800 + 190) and a
    // Claude Code api_request log record (input_tokens excludes them).
    let doc = json!({
        "resourceSpans": [{"scopeSpans": [{"spans": [{"name": "chat", "startTimeUnixNano": "1764583200000000000", "attributes": [
            {"key": "gen_ai.request.model", "value": {"stringValue": "claude-sonnet-4-5"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1000"}},
            {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": "800"}},
            {"key": "gen_ai.usage.cache_creation.input_tokens", "value": {"intValue": 190}}]}]}]}],
        "resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "1764583260000000000", "attributes": [
            {"key": "event.name", "value": {"stringValue": "api_request"}},
            {"key": "model", "value": {"stringValue": "claude-sonnet-4-5"}},
            {"key": "input_tokens", "value": {"intValue": "4"}},
            {"key": "cache_read_tokens", "value": {"intValue": "990"}},
            {"key": "cache_creation_tokens", "value": {"intValue": "30"}}]}]}]}]
    });
    let f = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(f.path(), doc.to_string()).unwrap();
    let ex = read_log(f.path(), None).unwrap();
    let u: Vec<(u64, u64, u64)> = ex
        .iter()
        .map(|e| {
            e.usage
                .as_ref()
                .map(|u| (u.input, u.creation, u.read))
                .unwrap()
        })
        .collect();
    assert_eq!(u, vec![(10, 190, 800), (4, 30, 990)]);
    assert_eq!(
        ex[1].sent_at_ms.unwrap() - ex[0].sent_at_ms.unwrap(),
        60_000
    );
    let (_, rows) = explain_file(f.path(), Some(LogKind::Otel), &PriceTable::bundled()).unwrap();
    assert_eq!((rows[0].prompt, rows[1].prompt), (1000, 1024));
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_yaml_exits_2_with_the_line() {
    let f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(f.path(), "interactions:\n- request:\n    uri: [unclosed\n").unwrap();
    let (code, err) = run(&["explain", f.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line ") && err.contains("hint:"), "{err}");
}

#[test]
fn unknown_kind_asks_for_kind_and_kind_overrides() {
    let f = tempfile::Builder::new().suffix(".txt").tempfile().unwrap();
    let line = json!({"request": {"timestamp": 1.0, "method": "POST", "url": "u", "headers": {}, "body": body("hi")}, "response": null});
    std::fs::write(f.path(), format!("\n{line}\n")).unwrap();
    let (code, err) = run(&["explain", f.path().to_str().unwrap(), "--kind", "har"]);
    assert_eq!(code, 2);
    assert!(err.contains("log.entries"), "{err}");
    let (code, err) = run(&[
        "import",
        "requests",
        f.path().to_str().unwrap(),
        "--kind",
        "claude-trace",
    ]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_body_without_messages_is_named() {
    let f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    let line = json!({"request": {"timestamp": 1.0, "method": "POST", "url": "u", "headers": {}, "body": {"messages": [], "system": "x"}}, "response": null});
    std::fs::write(f.path(), format!("{line}\n")).unwrap();
    let (code, err) = run(&["explain", f.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("line 1") && err.contains("names no model"),
        "{err}"
    );
}

#[test]
fn openai_responses_bodies_replay_on_the_openai_cache() {
    // No marks: the automatic cache. The first request's 1,220 tokens leave 1,152 readable
    // (9 whole 128-token units); the second appends, and its bill reads those 1,152.
    let ins = "You are a coding agent. ".repeat(200);
    let pair = |t: f64, items: serde_json::Value, read: u64, total: u64| {
        json!({"request": {"timestamp": t, "method": "POST", "url": "https://api.openai.com/v1/responses", "headers": {},
                           "body": {"model": "gpt-5", "instructions": ins, "input": items}},
               "response": {"timestamp": t + 1.0, "status_code": 200, "headers": {},
                            "body": {"object": "response", "usage": {"input_tokens": total, "input_tokens_details": {"cached_tokens": read}, "output_tokens": 20}}}})
        .to_string()
    };
    let first = json!([{"role": "user", "content": [{"type": "input_text", "text": "Fix the bug in main.rs"}]}]);
    let mut second = first.as_array().unwrap().clone();
    second.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}));
    second.push(
        json!({"role": "user", "content": [{"type": "input_text", "text": "Now run the tests"}]}),
    );
    let f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    std::fs::write(
        f.path(),
        format!(
            "{}\n{}\n",
            pair(100.0, first, 0, 1220),
            pair(130.0, json!(second), 1152, 1260)
        ),
    )
    .unwrap();
    let (_, rows) = explain_file(f.path(), None, &PriceTable::bundled()).unwrap();
    assert_eq!((rows[0].prompt, rows[1].prompt), (1220, 1260));
    assert_eq!(
        (rows[1].billed_read, rows[1].predicted_read),
        (Some(1152), 1152)
    );
    assert_eq!(rows[1].cause, plancache::requests::Cause::None);
}

#[test]
fn har_base64_bodies_are_decoded_and_bad_base64_exits_2() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // Entry 1: the response text is base64 (HAR 1.2 `content.encoding`); entry 2: the request
    // body too (`postData.encoding`, as some proxies write). Decoded, the bills are read
    // (0 / 1,600 then 1,600 / 0) and the second body is the first one again, so the replay
    // reads the 1,600 tokens of the marked system block: a wrong decoding has no body or no
    // usage and fails one of these.
    let mut a = har_entry("2026-12-01T10:00:00.000Z", "hi", 0, 1600);
    let text = a["response"]["content"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    a["response"]["content"] =
        json!({"mimeType": "application/json", "encoding": "base64", "text": b64(&text)});
    let mut b = har_entry("2026-12-01T10:01:00.000Z", "hi", 1600, 0);
    let post = b["request"]["postData"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    b["request"]["postData"] =
        json!({"mimeType": "application/json", "encoding": "base64", "text": b64(&post)});
    let doc = json!({"log": {"version": "1.2", "entries": [a, b]}});
    let f = tempfile::Builder::new().suffix(".har").tempfile().unwrap();
    std::fs::write(f.path(), doc.to_string()).unwrap();
    let (_, rows) = explain_file(f.path(), None, &PriceTable::bundled()).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].billed_read, rows[0].billed_write),
        (Some(0), Some(1600))
    );
    assert_eq!(
        (rows[1].billed_read, rows[1].billed_write),
        (Some(1600), Some(0))
    );
    assert_eq!(rows[1].predicted_read, 1600);

    let mut bad = har_entry("2026-12-01T10:00:00.000Z", "hi", 0, 1600);
    bad["response"]["content"] =
        json!({"mimeType": "application/json", "encoding": "base64", "text": "not base64!"});
    let doc = json!({"log": {"version": "1.2", "entries": [bad]}});
    let g = tempfile::Builder::new().suffix(".har").tempfile().unwrap();
    std::fs::write(g.path(), doc.to_string()).unwrap();
    let name = g.path().file_name().unwrap().to_str().unwrap().to_string();
    let (code, err) = run(&["explain", g.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&name)
            && err.contains("entry 1")
            && err.contains("response.content.text")
            && err.contains("base64")
            && err.contains("hint:"),
        "{err}"
    );
}

/// An OTLP log record: the event name as its body, string attributes.
fn otel_record(ms: u64, event: &str, attrs: &[(&str, String)]) -> serde_json::Value {
    let attributes: Vec<serde_json::Value> = attrs
        .iter()
        .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
        .collect();
    json!({"timeUnixNano": (ms * 1_000_000).to_string(), "body": {"stringValue": event}, "attributes": attributes})
}

#[test]
fn otel_raw_bodies_give_the_exact_requests() {
    // Two requests with OTEL_LOG_RAW_API_BODIES=1: the second's system prompt says "terse!"
    // where the first said "terse." (offset 13 of system[0].text), so nothing is read. Request
    // 1's usage comes from its response body (1,600 written), request 2's from its
    // claude_code.api_request event (cache_creation_tokens 1,600, cache_read_tokens 0).
    let b1 = body("hi");
    let mut b2 = body("hi");
    b2["system"][0]["text"] = json!("You are terse! ".repeat(400));
    let r1 = json!({"type": "message", "usage": {"input_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 1600, "output_tokens": 9}});
    let t0 = 1_764_583_200_000u64;
    let records = vec![
        otel_record(
            t0,
            "claude_code.api_request_body",
            &[("body", b1.to_string())],
        ),
        otel_record(
            t0 + 900,
            "claude_code.api_response_body",
            &[("body", r1.to_string())],
        ),
        otel_record(
            t0 + 60_000,
            "claude_code.api_request_body",
            &[("body", b2.to_string())],
        ),
        otel_record(
            t0 + 60_900,
            "claude_code.api_response_body",
            &[("body", json!({"type": "message"}).to_string())],
        ),
        otel_record(
            t0 + 60_950,
            "claude_code.api_request",
            &[
                ("model", "claude-sonnet-4-5".into()),
                ("input_tokens", "5".into()),
                ("cache_read_tokens", "0".into()),
                ("cache_creation_tokens", "1600".into()),
                ("output_tokens", "9".into()),
            ],
        ),
    ];
    let doc = json!({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]});
    let f = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(f.path(), doc.to_string()).unwrap();
    let (_, rows) = explain_file(f.path(), None, &PriceTable::bundled()).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].billed_read, rows[0].billed_write),
        (Some(0), Some(1600))
    );
    assert_eq!(
        (rows[1].billed_read, rows[1].billed_write),
        (Some(0), Some(1600))
    );
    assert_eq!(rows[1].at_ms, 60_000);
    assert_eq!(rows[1].diverges_at.as_deref(), Some("system[0].text@13"));
    assert_eq!(rows[1].cause, plancache::requests::Cause::SystemChanged);
    assert_eq!(rows[1].predicted_read, 0);

    // An inline body cut short: exit 2 naming the record.
    let cut = json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        otel_record(t0, "claude_code.api_request_body", &[("body", "{\"model\": \"claude".into())])
    ]}]}]});
    let g = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(g.path(), cut.to_string()).unwrap();
    let (code, err) = run(&["explain", g.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("record 1") && err.contains("not JSON") && err.contains("hint:"),
        "{err}"
    );
}
