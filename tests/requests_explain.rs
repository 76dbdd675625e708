//! One hand-made claude-trace log per cause `plancache explain` names. Each log is two requests
//! of one conversation (the second changes one thing) written as claude-trace JSONL
//! (`request{timestamp, method, url, headers, body}`, `response{timestamp, status_code, headers,
//! body}`, timestamps in seconds).

use std::io::Write;

use plancache::cache::PriceTable;
use plancache::requests::{explain_file, Cause, ExplainRow, LogKind};
use serde_json::{json, Value};

const SONNET: &str = "claude-sonnet-4-5";

fn tool(name: &str, path_desc: &str) -> Value {
    json!({"name": name, "description": format!("{name} a file."),
           "input_schema": {"type": "object", "properties": {"path": {"type": "string", "description": path_desc}}}})
}

fn tools() -> Vec<Value> {
    vec![
        tool("Read", "The path of the file to read"),
        tool("Edit", "The path of the file to edit"),
        tool("Bash", "Unused"),
    ]
}

/// A long static system block (well above the 1,024-token minimum) and a date line.
fn system(date: &str) -> Value {
    json!([
        {"type": "text", "text": "You are a careful coding agent. ".repeat(300), "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {"type": "text", "text": format!("Today's date is {date}.")}
    ])
}

fn text(t: &str, mark: bool) -> Value {
    let mut b = json!({"type": "text", "text": t});
    if mark {
        b["cache_control"] = json!({"type": "ephemeral"});
    }
    b
}

fn body(model: &str, tools: Vec<Value>, system: Value, messages: Vec<Value>) -> Value {
    json!({"model": model, "max_tokens": 4096, "tools": tools, "system": system, "messages": messages})
}

fn usage(read: u64, write: u64) -> Value {
    json!({"input_tokens": 3, "cache_creation_input_tokens": write, "cache_read_input_tokens": read, "output_tokens": 50})
}

fn pair(t: f64, body: &Value, usage: Value) -> String {
    json!({
        "request": {"timestamp": t, "method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": {}, "body": body},
        "response": {"timestamp": t + 2.0, "status_code": 200, "headers": {}, "body": {"type": "message", "usage": usage}},
        "logged_at": "2026-12-01T10:00:00.000Z"
    })
    .to_string()
}

/// The first request: tools, system, one user message marked.
fn first() -> Value {
    body(
        SONNET,
        tools(),
        system("2026-12-01"),
        vec![
            json!({"role": "user", "content": [text("Fix the failing test in src/lib.rs", true)]}),
        ],
    )
}

/// The conversation after one reply: the first user message unmarked, reply, new user message
/// marked.
fn second_messages() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": [text("Fix the failing test in src/lib.rs", false)]}),
        json!({"role": "assistant", "content": [text("I will read the file first.", false)]}),
        json!({"role": "user", "content": [text("Go ahead.", true)]}),
    ]
}

fn explain(lines: &[String]) -> Vec<ExplainRow> {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    let (_, rows) = explain_file(f.path(), Some(LogKind::ClaudeTrace), &PriceTable::bundled())
        .unwrap_or_else(|e| panic!("{e}"));
    rows
}

/// Two requests 30 s apart; the first writes 3,000 tokens.
fn two(second: &Value, read: u64, write: u64, gap_s: f64) -> Vec<ExplainRow> {
    explain(&[
        pair(1000.0, &first(), usage(0, 3000)),
        pair(1000.0 + gap_s, second, usage(read, write)),
    ])
}

#[test]
fn tool_reordered() {
    let mut t = tools();
    t.swap(0, 1);
    let rows = two(
        &body(SONNET, t, system("2026-12-01"), second_messages()),
        0,
        3100,
        30.0,
    );
    let r = &rows[1];
    assert_eq!(
        r.cause,
        Cause::ToolsChanged {
            how: "reordered (Edit moved to tools[0])".into()
        }
    );
    // "Read a file." vs "Edit a file.": the description differs at character 0.
    assert_eq!(r.diverges_at.as_deref(), Some("tools[0].description@0"));
    // Every mark of the first request lies after tools[0].
    assert_eq!(
        r.invalidated,
        vec!["system[0] (1h)", "messages[0].content[0] (5m)"]
    );
    assert_eq!(r.predicted_read, 0);
    assert!(r.is_break);
}

#[test]
fn schema_re_rendered() {
    let mut t = tools();
    // "The path of the file to read" -> "The path of the file to read (absolute)": the first
    // 28 characters agree, so the difference is at offset 28 of the description.
    t[0] = tool("Read", "The path of the file to read (absolute)");
    let rows = two(
        &body(SONNET, t, system("2026-12-01"), second_messages()),
        0,
        3100,
        30.0,
    );
    let r = &rows[1];
    assert_eq!(
        r.cause,
        Cause::ToolsChanged {
            how: "re-rendered: Read".into()
        }
    );
    assert_eq!(
        r.diverges_at.as_deref(),
        Some("tools[0].input_schema.properties.path.description@28")
    );
}

#[test]
fn date_in_the_system_prompt() {
    let rows = two(
        &body(SONNET, tools(), system("2026-12-02"), second_messages()),
        2800,
        300,
        30.0,
    );
    let r = &rows[1];
    assert_eq!(r.cause, Cause::SystemChanged);
    // "Today's date is 2026-12-0" is 25 characters.
    assert_eq!(r.diverges_at.as_deref(), Some("system[1].text@25"));
    // The 1 h entry on system[0] sits before the change and survives; the message entry dies.
    assert_eq!(r.invalidated, vec!["messages[0].content[0] (5m)"]);
    assert!(r.predicted_read > 0 && r.predicted_read < 3000);
}

#[test]
fn model_switch() {
    let rows = two(
        &body(
            "claude-opus-4-5",
            tools(),
            system("2026-12-01"),
            second_messages(),
        ),
        0,
        3100,
        30.0,
    );
    let r = &rows[1];
    assert_eq!(r.stream, "main");
    assert_eq!(
        r.cause,
        Cause::ModelChanged {
            from: SONNET.into(),
            to: "claude-opus-4-5".into()
        }
    );
    assert_eq!(r.predicted_read, 0);
}

#[test]
fn ttl_expiry() {
    // 6 min 10 s after the first request: the message entry (5 min) expired 1 min 10 s ago; the
    // 1 h system entry lives on and is read.
    let rows = two(
        &body(SONNET, tools(), system("2026-12-01"), second_messages()),
        2900,
        200,
        370.0,
    );
    let r = &rows[1];
    assert_eq!(
        r.cause,
        Cause::TtlExpired {
            gap_ms: 370_000,
            ttl_ms: 300_000
        }
    );
    assert!(r.detail.contains("1m 10s past the 5m TTL"), "{}", r.detail);
    assert_eq!(r.invalidated, vec!["messages[0].content[0] (5m)"]);
    assert!(
        r.predicted_read > 0 && r.predicted_read < 3000,
        "{}",
        r.predicted_read
    );
}

#[test]
fn marks_moved() {
    // The harness drops its message mark: only the system marks remain, before the entry the
    // first request wrote at its user message.
    let mut m = second_messages();
    m[2] = json!({"role": "user", "content": [text("Go ahead.", false)]});
    let rows = two(
        &body(SONNET, tools(), system("2026-12-01"), m),
        2900,
        0,
        30.0,
    );
    let r = &rows[1];
    assert_eq!(r.cause, Cause::MarksMoved);
    assert_eq!(r.diverges_at, None);
    assert!(r.detail.contains("messages[0].content[0]"), "{}", r.detail);
}

#[test]
fn lookback_overrun_with_24_parallel_tool_calls() {
    // The reply makes 24 tool calls; the next request carries 24 tool_use blocks and 24
    // tool_result blocks, the mark on the last result. From the previous entry (the first user
    // block) to that mark is 1 (assistant text) + 24 + 24 = 49 blocks, more than the 20 a read
    // looks back.
    let mut uses = vec![text("Reading the 24 files.", false)];
    let mut results = Vec::new();
    for k in 0..24 {
        uses.push(json!({"type": "tool_use", "id": format!("toolu_{k:02}"), "name": "Read", "input": {"path": format!("src/f{k}.rs")}}));
        let mut r = json!({"type": "tool_result", "tool_use_id": format!("toolu_{k:02}"), "content": format!("fn f{k}() {{}}")});
        if k == 23 {
            r["cache_control"] = json!({"type": "ephemeral"});
        }
        results.push(r);
    }
    let m = vec![
        json!({"role": "user", "content": [text("Fix the failing test in src/lib.rs", false)]}),
        json!({"role": "assistant", "content": uses}),
        json!({"role": "user", "content": results}),
    ];
    let rows = two(
        &body(SONNET, tools(), system("2026-12-01"), m),
        2900,
        600,
        30.0,
    );
    let r = &rows[1];
    assert_eq!(
        r.cause,
        Cause::LookbackOverrun {
            mark: "messages[2].content[23]".into(),
            blocks: 49
        }
    );
    assert!(r.predicted_read < 3000);
}

#[test]
fn bodies_identical_but_the_read_fell() {
    // The second request only appends, 30 s later, marks in place: the replay reads the 3,000
    // tokens the first wrote, the bill says 0.
    let rows = two(
        &body(SONNET, tools(), system("2026-12-01"), second_messages()),
        0,
        3100,
        30.0,
    );
    let r = &rows[1];
    assert_eq!(r.cause, Cause::ServerSide);
    assert_eq!(r.diverges_at, None);
    assert_eq!(r.predicted_read, 3000);
    assert_eq!(r.billed_read, Some(0));
    assert!(r.detail.contains("server side"));
}

#[test]
fn provider_verdict_is_shown() {
    let mut t = tools();
    t.swap(0, 1);
    let second = body(SONNET, t, system("2026-12-01"), second_messages());
    let mut line: Value = serde_json::from_str(&pair(1030.0, &second, usage(0, 3100))).unwrap();
    line["response"]["body"]["diagnostics"] =
        json!({"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 3000}});
    let rows = explain(&[pair(1000.0, &first(), usage(0, 3000)), line.to_string()]);
    assert_eq!(
        rows[1].verdict.as_deref(),
        Some("tools_changed (3000 tokens missed)")
    );
}

#[test]
fn bad_line_names_file_and_line() {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    writeln!(f, "{}", pair(1000.0, &first(), usage(0, 3000))).unwrap();
    writeln!(f, "{{\"request\": ").unwrap();
    let e = explain_file(f.path(), Some(LogKind::ClaudeTrace), &PriceTable::bundled()).unwrap_err();
    assert_eq!(e.place, "line 2");
    assert!(e.to_string().contains("hint:"));
}
