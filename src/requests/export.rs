//! `export requests`: the requests a replay sends, as a claude-trace JSONL or HAR 1.2 log, with
//! their `cache_control` marks and the replay's usage as the response.
//!
//! Each segment is one block whose text names its content (`[plancache segment <id>: N
//! tokens]`), so equal content is equal text; the request header `x-plancache-segment-tokens`
//! lists every block's token count, which `import requests` / `explain` use instead of
//! tokenizing (a lossless round trip). Marks: the scenario's explicit ones on their blocks;
//! under `anthropic-auto` also the top-level `cache_control` of automatic caching, which puts
//! one on the last block (the API's rule). Claude Code's own layout (`anthropic`) places marks
//! the request does not carry, so it is not exported.

use serde_json::{json, Value};

use crate::cache::{CacheModel, CacheOutcome};
use crate::engine::{self, ReplayEnv};
use crate::prompt::{Level, Request, Role, SegmentKind};
use crate::scenario::Session;
use crate::strategy::Strategy;

/// The header that carries each block's token count.
pub const TOKENS_HEADER: &str = "x-plancache-segment-tokens";

/// Epoch of exported clocks: 2026-01-01T00:00:00Z, in ms (the replay's clock starts at 0).
const EPOCH_MS: u64 = 1_767_225_600_000;

/// The log formats `export requests` writes (the binary's mirror in `cli/values.rs` carries the
/// help text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// claude-trace's JSONL: one request/response pair per line.
    ClaudeTrace,
    /// An HTTP Archive (HAR 1.2), as browsers and mitmproxy write.
    Har,
}

/// One request the replay sent, with what the cache model answered.
struct Sent {
    request: Request,
    outcome: CacheOutcome,
    visible_at_ms: u64,
}

struct Recorder<'a> {
    inner: &'a mut dyn CacheModel,
    sent: Vec<Sent>,
}

impl CacheModel for Recorder<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        self.inner.lookup(req)
    }
    fn store(&mut self, req: &Request, o: &CacheOutcome, visible: u64, completed: u64) {
        self.sent.push(Sent {
            request: req.clone(),
            outcome: o.clone(),
            visible_at_ms: visible,
        });
        self.inner.store(req, o, visible, completed)
    }
}

fn block(seg: &crate::prompt::Segment, mark: bool) -> Value {
    let mut b = json!({"type": "text", "text": format!("[plancache segment {:016x}: {} tokens]", seg.id, seg.len())});
    let ttl = seg.breakpoint.map(|t| t.as_str());
    if let Some(t) = ttl.or(mark.then_some("")) {
        b["cache_control"] = if t.is_empty() {
            json!({"type": "ephemeral"})
        } else {
            json!({"type": "ephemeral", "ttl": t})
        };
    }
    b
}

/// The Messages body of one request.
fn body(req: &Request, automatic: Option<&str>) -> Value {
    let mut tools = Vec::new();
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for seg in &req.segments {
        match seg.level {
            Level::Tools => {
                let mut t = json!({"name": seg.label.trim_start_matches("tool:"), "description": block(seg, false)["text"], "input_schema": {"type": "object"}});
                if let Some(ttl) = seg.breakpoint {
                    t["cache_control"] = json!({"type": "ephemeral", "ttl": ttl.as_str()});
                }
                tools.push(t);
            }
            Level::System => system.push(block(seg, false)),
            Level::Messages => {
                let role = match seg.kind {
                    SegmentKind::Message(Role::Assistant) => "assistant",
                    _ => "user",
                };
                match messages.last_mut() {
                    Some(m) if m["role"] == role => m["content"]
                        .as_array_mut()
                        .expect("content list")
                        .push(block(seg, false)),
                    _ => messages.push(json!({"role": role, "content": [block(seg, false)]})),
                }
            }
        }
    }
    let mut b = json!({"model": req.model, "max_tokens": 4096, "tools": tools, "system": system, "messages": messages});
    if let Some(ttl) = automatic {
        b["cache_control"] = json!({"type": "ephemeral", "ttl": ttl});
    }
    b
}

/// The response's usage: everything neither read nor written is `input_tokens`.
fn usage(s: &Sent) -> Value {
    let o = &s.outcome;
    json!({
        "input_tokens": o.prompt_tokens - o.cached_tokens - o.cache_write_tokens(),
        "cache_creation_input_tokens": o.cache_write_tokens(),
        "cache_read_input_tokens": o.cached_tokens,
        "cache_creation": {"ephemeral_5m_input_tokens": o.write_5m_tokens, "ephemeral_1h_input_tokens": o.write_1h_tokens},
        "output_tokens": s.request.output_tokens,
    })
}

fn iso(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(EPOCH_MS + ms);
    humantime::format_rfc3339_millis(t).to_string()
}

fn pair_line(s: &Sent, automatic: Option<&str>) -> Value {
    let counts: Vec<String> = s
        .request
        .segments
        .iter()
        .map(|g| g.len().to_string())
        .collect();
    json!({
        "request": {
            "timestamp": (EPOCH_MS + s.request.sent_at_ms) as f64 / 1000.0,
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages",
            "headers": {"content-type": "application/json", TOKENS_HEADER: counts.join(","), "x-plancache-stream": s.request.stream},
            "body": body(&s.request, automatic),
        },
        "response": {
            "timestamp": (EPOCH_MS + s.visible_at_ms) as f64 / 1000.0,
            "status_code": 200,
            "headers": {"content-type": "application/json"},
            "body": {"type": "message", "role": "assistant", "model": s.request.model, "content": [], "usage": usage(s)},
        },
        "logged_at": iso(s.visible_at_ms),
    })
}

fn har_entry(s: &Sent, automatic: Option<&str>) -> Value {
    let p = pair_line(s, automatic);
    let hdrs = |h: &Value| -> Value {
        Value::Array(
            h.as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect(),
        )
    };
    json!({
        "startedDateTime": iso(s.request.sent_at_ms),
        "time": s.visible_at_ms.saturating_sub(s.request.sent_at_ms),
        "request": {"method": "POST", "url": p["request"]["url"], "httpVersion": "HTTP/1.1", "headers": hdrs(&p["request"]["headers"]),
                    "queryString": [], "cookies": [], "headersSize": -1, "bodySize": -1,
                    "postData": {"mimeType": "application/json", "text": p["request"]["body"].to_string()}},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": hdrs(&p["response"]["headers"]), "cookies": [],
                     "content": {"size": -1, "mimeType": "application/json", "text": p["response"]["body"].to_string()},
                     "redirectURL": "", "headersSize": -1, "bodySize": -1},
        "cache": {},
        "timings": {"send": 0, "wait": s.visible_at_ms.saturating_sub(s.request.sent_at_ms), "receive": 0},
    })
}

/// Replays `session` under `strategy` on `cache` and writes the requests it sent.
/// `automatic`: the TTL of the top-level `cache_control` (the `anthropic-auto` layout).
pub fn export(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
    automatic: Option<&str>,
    kind: ExportKind,
) -> Result<(Vec<u8>, usize), engine::ReplayError> {
    let mut rec = Recorder {
        inner: cache,
        sent: Vec::new(),
    };
    engine::replay(session, strategy, &mut rec, env)?;
    let mut sent = rec.sent;
    sent.sort_by_key(|s| (s.request.sent_at_ms, s.request.index));
    let n = sent.len();
    let bytes = match kind {
        ExportKind::ClaudeTrace => {
            let mut out = Vec::new();
            for s in &sent {
                out.extend_from_slice(pair_line(s, automatic).to_string().as_bytes());
                out.push(b'\n');
            }
            out
        }
        ExportKind::Har => {
            let entries: Vec<Value> = sent.iter().map(|s| har_entry(s, automatic)).collect();
            let doc = json!({"log": {"version": "1.2", "creator": {"name": "plancache", "version": env!("CARGO_PKG_VERSION")}, "entries": entries}});
            let mut v = serde_json::to_vec_pretty(&doc).unwrap_or_default();
            v.push(b'\n');
            v
        }
    };
    Ok((bytes, n))
}
