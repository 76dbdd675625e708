//! Readers for the four log kinds. Each yields the request/response pairs in log order.
//!
//! Field names, from the projects' own source and specs:
//! - **VCR cassettes** (vcrpy's YAML, as pydantic-ai records them in `tests/models/cassettes/`):
//!   `interactions[]`, each `request{method, uri, headers, body}` and `response{status{code},
//!   headers, body{string}}`; pydantic-ai's serializer writes JSON bodies as `parsed_body`
//!   instead of `body` (pydantic/pydantic-ai `tests/json_body_serializer.py`).
//! - **claude-trace** JSONL (badlogic/lemmy `apps/claude-trace/src/types.ts`, `RawPair`): one
//!   pair per line, `request{timestamp, method, url, headers, body}`, `response{timestamp,
//!   status_code, headers, body?, body_raw?, events?}` (null for an orphaned request), timestamps
//!   in seconds (`interceptor.ts`: `requestTimestamp / 1000`), `body_raw` holding SSE text.
//! - **HAR 1.2** (w3c-webperf HAR spec): `log.entries[]`, each `startedDateTime` (ISO 8601),
//!   `time` (ms), `request{method, url, postData{text}}`, `response{status, headers[{name,
//!   value}], content{text, encoding?}}`.
//! - **OpenTelemetry** JSON (OTLP/JSON): `resourceSpans[].scopeSpans[].spans[]` (`startTimeUnixNano`,
//!   `endTimeUnixNano`, `attributes[{key, value{stringValue|intValue|doubleValue}}]`) and
//!   `resourceLogs[].scopeLogs[].logRecords[]` (`timeUnixNano`, `attributes`). GenAI semantic
//!   conventions: `gen_ai.request.model`, `gen_ai.usage.input_tokens` (which includes the cache
//!   buckets), `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens`,
//!   `gen_ai.usage.output_tokens`; Claude Code's `claude_code.api_request` events: `model`,
//!   `input_tokens` (Anthropic's: after the last breakpoint), `cache_read_tokens`,
//!   `cache_creation_tokens`, `output_tokens` (code.claude.com/docs/en/monitoring-usage).
//!   With `OTEL_LOG_RAW_API_BODIES=1`, `claude_code.api_request_body` /
//!   `claude_code.api_response_body` events with a `body` attribute (not in Claude Code's own
//!   docs: see `otel_exchanges`).

use std::path::Path;

use serde_json::Value;

use super::usage::{verdict, Usage};
use super::{Exchange, LogError};

/// The kinds of log `import requests` and `explain` read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// VCR cassette (YAML `interactions`).
    Vcr,
    /// claude-trace JSONL (one request/response pair per line).
    ClaudeTrace,
    /// HAR 1.2 (mitmproxy, Charles, browsers).
    Har,
    /// OpenTelemetry OTLP/JSON export (spans or log records).
    Otel,
}

impl LogKind {
    /// The kind's name as messages write it (`vcr`, `claude-trace`, `har`, `otel`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogKind::Vcr => "vcr",
            LogKind::ClaudeTrace => "claude-trace",
            LogKind::Har => "har",
            LogKind::Otel => "otel",
        }
    }
}

/// Largest log read (bytes): logs of long sessions reach tens of MB.
const MAX_LOG_BYTES: u64 = 512 * 1024 * 1024;

/// Guesses the kind from the file's name and first bytes.
pub fn detect_kind(path: &Path, text: &str) -> Option<LogKind> {
    let name = path.to_string_lossy().to_lowercase();
    let head = text.trim_start();
    if name.ends_with(".yaml") || name.ends_with(".yml") || head.starts_with("interactions:") {
        return Some(LogKind::Vcr);
    }
    if name.ends_with(".har") {
        return Some(LogKind::Har);
    }
    if head.starts_with('{') {
        let first = head.lines().next().unwrap_or("");
        if first.contains("\"request\"") && first.contains("\"response\"") {
            return Some(LogKind::ClaudeTrace);
        }
        let start: String = head.chars().take(4096).collect();
        if start.contains("\"resourceSpans\"") || start.contains("\"resourceLogs\"") {
            return Some(LogKind::Otel);
        }
        if start.contains("\"log\"") && start.contains("\"entries\"") {
            return Some(LogKind::Har);
        }
        if first.contains("\"request\"") {
            return Some(LogKind::ClaudeTrace);
        }
    }
    None
}

/// Reads a log of the given kind (detected when `None`).
pub fn read_log(path: &Path, kind: Option<LogKind>) -> Result<Vec<Exchange>, LogError> {
    let size = std::fs::metadata(path)
        .map_err(|e| LogError::new(path, "file", e.to_string(), "check the path"))?
        .len();
    if size > MAX_LOG_BYTES {
        return Err(LogError::new(
            path,
            "file",
            format!("{size} bytes is more than the {MAX_LOG_BYTES} read"),
            "split the log by session",
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| LogError::new(path, "file", e.to_string(), "the log must be UTF-8 text"))?;
    let kind = match kind.or_else(|| detect_kind(path, &text)) {
        Some(k) => k,
        None => {
            return Err(LogError::new(
                path,
                "file",
                "not a VCR cassette, claude-trace JSONL, HAR or OpenTelemetry JSON file",
                "name the kind with --kind vcr|claude-trace|har|otel",
            ))
        }
    };
    let out = match kind {
        LogKind::Vcr => read_vcr(path, &text)?,
        LogKind::ClaudeTrace => read_claude_trace(path, &text)?,
        LogKind::Har => read_har(path, &text)?,
        LogKind::Otel => read_otel(path, &text)?,
    };
    if out.is_empty() {
        return Err(LogError::new(
            path,
            "file",
            format!("no API request found in this {} log", kind.as_str()),
            "is this the right file, or another --kind?",
        ));
    }
    Ok(out)
}

/// A header value from a map of `name: value` or `name: [value]` (any case).
fn header(headers: Option<&Value>, name: &str) -> Option<String> {
    let h = headers?;
    if let Some(list) = h.as_array() {
        // HAR: [{name, value}]
        return list
            .iter()
            .find(|e| {
                e.get("name").and_then(Value::as_str).map(str::to_lowercase) == Some(name.into())
            })
            .and_then(|e| e.get("value").and_then(Value::as_str).map(String::from));
    }
    let (_, v) = h
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))?;
    match v {
        Value::Array(a) => a.first().and_then(Value::as_str).map(String::from),
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The export headers (`x-plancache-segment-tokens`, `x-plancache-stream`), when present.
fn fill_hints(ex: &mut Exchange, headers: Option<&Value>) {
    ex.segment_tokens = header(headers, super::export::TOKENS_HEADER)
        .and_then(|v| v.split(',').map(|n| n.trim().parse().ok()).collect());
    ex.stream_hint = header(headers, "x-plancache-stream");
}

/// Fills usage and verdict from a response body (JSON value, or SSE text) and headers.
fn fill_response(
    ex: &mut Exchange,
    body: Option<Value>,
    raw: Option<&str>,
    headers: Option<&Value>,
) {
    let body = body.or_else(|| raw.and_then(|r| serde_json::from_str(r).ok()));
    if let Some(b) = &body {
        ex.usage = b.get("usage").and_then(Usage::from_value);
        ex.verdict = verdict(b);
    }
    if ex.usage.is_none() {
        if let Some(r) = raw {
            ex.usage = Usage::from_sse(r);
        }
    }
    if ex.usage.is_none() {
        let h = |k: &str| header(headers, k).and_then(|v| v.trim().parse().ok());
        ex.usage = Usage::from_bedrock_headers(&h);
    }
    ex.response = body;
}

/// A request body: a JSON value, or a string holding JSON.
fn json_body(v: Option<&Value>) -> Option<Value> {
    match v? {
        Value::String(s) => serde_json::from_str(s).ok(),
        Value::Object(m) if m.contains_key("string") => json_body(m.get("string")),
        Value::Null => None,
        other => Some(other.clone()),
    }
}

fn read_vcr(path: &Path, text: &str) -> Result<Vec<Exchange>, LogError> {
    let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| {
        let place = e
            .location()
            .map(|l| format!("line {}", l.line()))
            .unwrap_or_else(|| "file".into());
        LogError::new(
            path,
            place,
            e.to_string(),
            "a VCR cassette is YAML with `interactions:`",
        )
    })?;
    let Some(list) = doc.get("interactions").and_then(Value::as_array) else {
        return Err(LogError::new(
            path,
            "file",
            "no `interactions` list",
            "a VCR cassette starts with `interactions:`",
        ));
    };
    let mut out = Vec::new();
    for (i, it) in list.iter().enumerate() {
        let place = format!("interaction {}", i + 1);
        let rq = it.get("request").ok_or_else(|| {
            LogError::new(
                path,
                &place,
                "no `request`",
                "each interaction has request and response",
            )
        })?;
        let url = rq
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if url.contains("count_tokens") {
            continue; // a token count, not a request that reads the cache
        }
        let body = json_body(rq.get("parsed_body")).or_else(|| json_body(rq.get("body")));
        let rs = it.get("response");
        let mut ex = Exchange {
            place,
            url,
            body,
            ..Exchange::default()
        };
        let raw = rs
            .and_then(|r| r.get("body"))
            .and_then(|b| b.get("string").or(Some(b)))
            .and_then(Value::as_str);
        let parsed = rs.and_then(|r| r.get("parsed_body")).cloned();
        fill_response(&mut ex, parsed, raw, rs.and_then(|r| r.get("headers")));
        out.push(ex);
    }
    Ok(out)
}

fn secs_to_ms(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_f64)
        .map(|s| (s * 1000.0).round() as u64)
}

fn read_claude_trace(path: &Path, text: &str) -> Result<Vec<Exchange>, LogError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = format!("line {}", n + 1);
        let pair: Value = serde_json::from_str(line).map_err(|e| {
            LogError::new(
                path,
                &place,
                e.to_string(),
                "claude-trace writes one JSON object per line",
            )
        })?;
        let Some(rq) = pair.get("request") else {
            return Err(LogError::new(
                path,
                &place,
                "no `request` object",
                "each line is {\"request\": {...}, \"response\": {...}}",
            ));
        };
        let url = rq
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let body = json_body(rq.get("body"));
        if url.contains("count_tokens")
            || body
                .as_ref()
                .is_none_or(|b| b.get("messages").is_none() && b.get("input").is_none())
        {
            continue; // telemetry, OAuth and other side calls the interceptor also logs
        }
        let rs = pair.get("response").filter(|r| !r.is_null());
        let mut ex = Exchange {
            place,
            url,
            body,
            sent_at_ms: secs_to_ms(rq.get("timestamp")),
            received_at_ms: rs.and_then(|r| secs_to_ms(r.get("timestamp"))),
            ..Exchange::default()
        };
        fill_hints(&mut ex, rq.get("headers"));
        if let Some(rs) = rs {
            let parsed = rs.get("body").filter(|b| b.is_object()).cloned();
            let raw = rs.get("body_raw").and_then(Value::as_str);
            fill_response(&mut ex, parsed, raw, rs.get("headers"));
        }
        out.push(ex);
    }
    Ok(out)
}

/// Milliseconds since the epoch of an ISO 8601 / RFC 3339 time (`Z` or `±HH:MM`).
pub fn parse_iso_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let (base, offset_min): (&str, i64) = if let Some(b) = s.strip_suffix('Z') {
        (b, 0)
    } else if s.len() > 6
        && matches!(&s[s.len() - 6..s.len() - 5], "+" | "-")
        && &s[s.len() - 3..s.len() - 2] == ":"
    {
        let sign = if &s[s.len() - 6..s.len() - 5] == "-" {
            -1
        } else {
            1
        };
        let h: i64 = s[s.len() - 5..s.len() - 3].parse().ok()?;
        let m: i64 = s[s.len() - 2..].parse().ok()?;
        (&s[..s.len() - 6], sign * (h * 60 + m))
    } else {
        (s, 0)
    };
    let t = humantime::parse_rfc3339_weak(base).ok()?;
    let ms = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
    u64::try_from(ms - offset_min * 60_000).ok()
}

fn read_har(path: &Path, text: &str) -> Result<Vec<Exchange>, LogError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        LogError::new(
            path,
            format!("line {}", e.line()),
            e.to_string(),
            "a HAR file is one JSON document",
        )
    })?;
    let Some(entries) = doc.pointer("/log/entries").and_then(Value::as_array) else {
        return Err(LogError::new(
            path,
            "file",
            "no `log.entries`",
            "export the capture as HAR 1.2",
        ));
    };
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let place = format!("entry {}", i + 1);
        let url = e
            .pointer("/request/url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let post = har_text(
            path,
            &place,
            "request.postData",
            e.pointer("/request/postData"),
        )?;
        let body = post
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok());
        if url.contains("count_tokens")
            || body
                .as_ref()
                .is_none_or(|b| b.get("messages").is_none() && b.get("input").is_none())
        {
            continue;
        }
        let sent = e
            .get("startedDateTime")
            .and_then(Value::as_str)
            .and_then(parse_iso_ms);
        if sent.is_none() {
            return Err(LogError::new(
                path,
                &place,
                "no readable `startedDateTime`",
                "HAR 1.2 dates are ISO 8601, e.g. 2026-12-01T10:00:00.000Z",
            ));
        }
        let time = e
            .get("time")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .max(0.0) as u64;
        let mut ex = Exchange {
            place,
            url,
            body,
            sent_at_ms: sent,
            received_at_ms: sent.map(|s| s + time),
            ..Exchange::default()
        };
        fill_hints(&mut ex, e.pointer("/request/headers"));
        let raw = har_text(
            path,
            &ex.place,
            "response.content",
            e.pointer("/response/content"),
        )?;
        fill_response(
            &mut ex,
            None,
            raw.as_deref(),
            e.pointer("/response/headers"),
        );
        out.push(ex);
    }
    Ok(out)
}

/// The `text` of a HAR `content` (or `postData`) object, decoded when its `encoding` is
/// `base64`. HAR 1.2 (w3c-webperf "HTTP Archive (HAR) format", `content`: "encoding [string,
/// optional] - Encoding used for response text field e.g \"base64\"") defines the field on
/// responses; some tools write it on `postData` too, read the same way.
fn har_text(
    path: &Path,
    place: &str,
    what: &str,
    obj: Option<&Value>,
) -> Result<Option<String>, LogError> {
    use base64::Engine as _;
    let Some(text) = obj.and_then(|o| o.get("text")).and_then(Value::as_str) else {
        return Ok(None);
    };
    let encoding = obj.and_then(|o| o.get("encoding")).and_then(Value::as_str);
    if !encoding.is_some_and(|e| e.eq_ignore_ascii_case("base64")) {
        return Ok(Some(text.to_string()));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|err| {
            LogError::new(
                path,
                place,
                format!("{what}.text says `encoding: base64` but is not valid base64: {err}"),
                format!("re-export the capture; if {what}.text is plain text, drop its `encoding` field"),
            )
        })?;
    String::from_utf8(bytes).map(Some).map_err(|_| {
        LogError::new(
            path,
            place,
            format!("{what}.text decodes from base64 to bytes that are not UTF-8 text"),
            "a compressed body (gzip, br) must be saved decompressed: export the HAR with decoded content",
        )
    })
}

/// An OTLP attribute value as JSON.
fn otel_attrs(v: &Value) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    for a in v
        .get("attributes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(k), Some(val)) = (a.get("key").and_then(Value::as_str), a.get("value")) else {
            continue;
        };
        let x = val
            .get("stringValue")
            .cloned()
            .or_else(|| {
                val.get("intValue").map(|i| match i {
                    Value::String(s) => s.parse::<u64>().map(Value::from).unwrap_or(Value::Null),
                    other => other.clone(),
                })
            })
            .or_else(|| val.get("doubleValue").cloned())
            .unwrap_or(Value::Null);
        m.insert(k.to_string(), x);
    }
    m
}

fn otel_usage(a: &serde_json::Map<String, Value>) -> Option<(Usage, Option<String>)> {
    let n = |k: &str| {
        a.get(k).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    let model = a
        .get("gen_ai.request.model")
        .or_else(|| a.get("gen_ai.response.model"))
        .or_else(|| a.get("model"))
        .and_then(Value::as_str)
        .map(String::from);
    if let Some(total) = n("gen_ai.usage.input_tokens") {
        let read = n("gen_ai.usage.cache_read.input_tokens").unwrap_or(0);
        let creation = n("gen_ai.usage.cache_creation.input_tokens").unwrap_or(0);
        return Some((
            Usage {
                input: total.saturating_sub(read + creation),
                creation,
                read,
                output: n("gen_ai.usage.output_tokens").unwrap_or(0),
                ..Usage::default()
            },
            model,
        ));
    }
    let read = n("cache_read_tokens")?;
    Some((
        Usage {
            input: n("input_tokens").unwrap_or(0),
            creation: n("cache_creation_tokens").unwrap_or(0),
            read,
            output: n("output_tokens").unwrap_or(0),
            ..Usage::default()
        },
        model,
    ))
}

fn read_otel(path: &Path, text: &str) -> Result<Vec<Exchange>, LogError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        LogError::new(
            path,
            format!("line {}", e.line()),
            e.to_string(),
            "an OTLP/JSON export is one JSON document",
        )
    })?;
    let mut records: Vec<(u64, serde_json::Map<String, Value>)> = Vec::new();
    let nanos = |v: Option<&Value>| {
        v.and_then(|x| {
            x.as_u64()
                .or_else(|| x.as_str().and_then(|s| s.parse().ok()))
        })
        .map(|n| n / 1_000_000)
    };
    for rs in doc
        .get("resourceSpans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for ss in rs
            .get("scopeSpans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for sp in ss
                .get("spans")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                records.push((
                    nanos(sp.get("startTimeUnixNano")).unwrap_or(0),
                    otel_attrs(sp),
                ));
            }
        }
    }
    for rl in doc
        .get("resourceLogs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for sl in rl
            .get("scopeLogs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for lr in sl
                .get("logRecords")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut a = otel_attrs(lr);
                // The event name: the record's body (Claude Code writes it there) or
                // `event.name`; kept under a key no attribute uses.
                if let Some(name) = lr.pointer("/body/stringValue").cloned() {
                    a.entry(EVENT_KEY).or_insert(name);
                }
                records.push((nanos(lr.get("timeUnixNano")).unwrap_or(0), a));
            }
        }
    }
    records.sort_by_key(|r| r.0);
    otel_exchanges(path, &records)
}

/// Where the reader keeps a log record's event name among its attributes.
const EVENT_KEY: &str = "\u{0}event";

/// A record's event name without Claude Code's `claude_code.` prefix.
fn event_name(a: &serde_json::Map<String, Value>) -> Option<&str> {
    let n = a
        .get("event.name")
        .or_else(|| a.get(EVENT_KEY))
        .and_then(Value::as_str)?;
    Some(n.strip_prefix("claude_code.").unwrap_or(n))
}

/// The request JSON in a raw-body event's `body` attribute.
fn raw_body(
    path: &Path,
    place: &str,
    a: &serde_json::Map<String, Value>,
) -> Result<Value, LogError> {
    let text = a.get("body").and_then(Value::as_str).ok_or_else(|| {
        LogError::new(
            path,
            place,
            "a raw-body event without a `body` attribute",
            "export with OTEL_LOG_RAW_API_BODIES=1 (and CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1), or drop the record",
        )
    })?;
    serde_json::from_str(text).map_err(|e| {
        LogError::new(
            path,
            place,
            format!("the `body` attribute is not JSON ({e}); Claude Code cuts long inline bodies"),
            "capture a session this long with claude-trace or a proxy (HAR), which keep whole bodies",
        )
    })
}

/// Pairs the records into exchanges, in time order. Claude Code with
/// `OTEL_LOG_RAW_API_BODIES=1` emits `claude_code.api_request_body` and
/// `claude_code.api_response_body` events whose `body` attribute is the request or response
/// JSON. Those names and that attribute are not in Claude Code's own monitoring page
/// (code.claude.com/docs/en/monitoring-usage, read 2026-12-02, lists `claude_code.api_request`
/// with usage attributes only; anthropics/claude-code#49310 asks for the raw-body events to be
/// documented); they are as Coralogix's Claude Code data-set reference describes them
/// (coralogix.com/docs/snippets/ai-claude-sessions-dataset, read 2026-12-02). Only that shape
/// is read: a request body starts an exchange, the next response body and the next usage
/// record (`api_request` or a GenAI span) complete it; a usage record with no body pending is
/// a usage-only exchange, as before.
fn otel_exchanges(
    path: &Path,
    records: &[(u64, serde_json::Map<String, Value>)],
) -> Result<Vec<Exchange>, LogError> {
    let mut out: Vec<Exchange> = Vec::new();
    let (mut want_response, mut want_usage) = (None::<usize>, None::<usize>);
    for (i, (t, a)) in records.iter().enumerate() {
        let place = format!("record {}", i + 1);
        match event_name(a) {
            Some("api_request_body") => {
                let body = raw_body(path, &place, a)?;
                out.push(Exchange {
                    place,
                    sent_at_ms: Some(*t),
                    body: Some(body),
                    ..Exchange::default()
                });
                want_response = Some(out.len() - 1);
                want_usage = want_response;
                continue;
            }
            Some("api_response_body") => {
                // JSON, or the server-sent events of a streamed response.
                let text = a.get("body").and_then(Value::as_str);
                if let Some(k) = want_response.take() {
                    let billed = out[k].usage.take();
                    fill_response(&mut out[k], None, text, None);
                    out[k].usage = out[k].usage.take().or(billed);
                    out[k].received_at_ms = Some(*t);
                }
                continue;
            }
            _ => {}
        }
        let Some((usage, model)) = otel_usage(a) else {
            continue;
        };
        match want_usage.take() {
            Some(k) => {
                // The response body's own usage, when it has one, is the fuller record.
                out[k].usage.get_or_insert(usage);
                if out[k].model_hint.is_none() {
                    out[k].model_hint = model;
                }
            }
            None => out.push(Exchange {
                place,
                sent_at_ms: Some(*t),
                model_hint: model,
                usage: Some(usage),
                ..Exchange::default()
            }),
        }
    }
    Ok(out)
}
