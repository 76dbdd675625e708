//! Reading only what the billed view needs from a Claude Code transcript (`account
//! --billed-only`): streamed line by line, a line is parsed only when it holds `"usage"`, and
//! then only into the few fields a bill needs (the rest of the record is skipped by serde
//! without building values). The result is a [`Transcript`] holding one request item per API
//! request, as the full importer would bill it:
//! - a request is its `requestId` (else `message.id`); its first record with a readable
//!   `usage` opens it (time and model from that record) and a later record's usage replaces it
//!   (the last record of a request carries the billed usage);
//! - records of type other than `assistant`, without a valid `timestamp`, or written by the
//!   harness (`model` `<synthetic>`) are not requests;
//! - streams: the main thread, and sidechain records by `agentId` (one stream per agent, else
//!   one for all sidechains: the importer's parent-chain split only changes per-stream billed
//!   breaks, never a token or a dollar).

use super::AccountError;
use crate::util::ScenarioError;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;

use crate::import::{parse_time_ms, ApiRequest, Item, Stream, StreamKind, Transcript, Usage};

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "requestId", borrow)]
    request_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    sidechain: Option<bool>,
    #[serde(rename = "agentId", borrow)]
    agent_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    version: Option<String>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<std::borrow::Cow<'a, str>>,
    usage: Option<UsageRecord>,
}

#[derive(Deserialize)]
struct UsageRecord {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation: Option<Split>,
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Split {
    ephemeral_5m_input_tokens: Option<u64>,
    ephemeral_1h_input_tokens: Option<u64>,
}

impl UsageRecord {
    fn usage(&self) -> Option<Usage> {
        Some(Usage {
            input_tokens: self.input_tokens?,
            cache_creation_input_tokens: self.cache_creation_input_tokens.unwrap_or(0),
            cache_read_input_tokens: self.cache_read_input_tokens.unwrap_or(0),
            creation_5m: self
                .cache_creation
                .as_ref()
                .and_then(|s| s.ephemeral_5m_input_tokens),
            creation_1h: self
                .cache_creation
                .as_ref()
                .and_then(|s| s.ephemeral_1h_input_tokens),
            output_tokens: self.output_tokens.unwrap_or(0),
            reasoning_tokens: 0,
        })
    }
}

/// The streams being built: (key, stream), in order of first appearance.
#[derive(Default)]
struct Streams {
    streams: Vec<Stream>,
    by_key: HashMap<String, usize>,
    by_request: HashMap<String, (usize, usize)>,
}

impl Streams {
    fn index(&mut self, key: &str, kind: StreamKind) -> usize {
        if let Some(&i) = self.by_key.get(key) {
            return i;
        }
        let agents = self
            .streams
            .iter()
            .filter(|s| s.kind == StreamKind::Agent)
            .count();
        self.streams.push(Stream {
            name: match kind {
                StreamKind::Main => "main".into(),
                StreamKind::Agent => format!("agent-{}", agents + 1),
            },
            kind,
            initial_mode: crate::plan_mode::Mode::Default,
            version: None,
            items: Vec::new(),
            harness: crate::import::Harness::ClaudeCode,
        });
        self.by_key.insert(key.to_string(), self.streams.len() - 1);
        self.streams.len() - 1
    }

    fn record(&mut self, n: usize, r: Record<'_>) {
        let (Some("assistant"), Some(message)) = (r.kind.as_deref(), r.message) else {
            return;
        };
        let Some(at_ms) = r.timestamp.as_deref().and_then(parse_time_ms) else {
            return;
        };
        let model = message.model.as_deref().unwrap_or("");
        if model == "<synthetic>" {
            return;
        }
        let Some(id) = r.request_id.or(message.id) else {
            return;
        };
        let Some(usage) = message.usage.as_ref().and_then(UsageRecord::usage) else {
            return;
        };
        if let Some(&(s, i)) = self.by_request.get(id.as_ref()) {
            if let Item::Request(q) = &mut self.streams[s].items[i] {
                q.usage = usage;
            }
            return;
        }
        let (key, kind) = match (r.sidechain.unwrap_or(false), r.agent_id.as_deref()) {
            (false, _) => ("main".to_string(), StreamKind::Main),
            (true, Some(a)) => (format!("agent:{a}"), StreamKind::Agent),
            (true, None) => ("sidechain".to_string(), StreamKind::Agent),
        };
        let s = self.index(&key, kind);
        if self.streams[s].version.is_none() {
            self.streams[s].version = r.version;
        }
        self.streams[s].items.push(Item::Request(ApiRequest {
            request_id: id.to_string(),
            line: n,
            first_at_ms: at_ms,
            model: model.to_string(),
            usage,
            blocks: Vec::new(),
        }));
        let i = self.streams[s].items.len() - 1;
        self.by_request.insert(id.into_owned(), (s, i));
    }
}

/// Calls `f` with every line of `path` (1-based number, bytes with the newline) through one
/// reused buffer; returns the number of lines.
fn each_line(path: &Path, mut f: impl FnMut(usize, &[u8])) -> Result<usize, AccountError> {
    let cannot =
        |e: std::io::Error| ScenarioError::new(path, None, format!("cannot read transcript: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(cannot)? == 0 {
            return Ok(n);
        }
        n += 1;
        f(n, &line);
    }
}

/// The billed requests of one Claude Code file (see the module doc).
pub fn read(path: &Path) -> Result<Transcript, AccountError> {
    let finder = memchr::memmem::Finder::new(b"\"usage\"");
    let mut streams = Streams::default();
    let n = each_line(path, |n, line| {
        if finder.find(line).is_none() {
            return;
        }
        if let Ok(r) = serde_json::from_slice::<Record<'_>>(line) {
            streams.record(n, r);
        }
    })?;
    Ok(Transcript {
        source: path.display().to_string(),
        name: path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("transcript")
            .to_string(),
        streams: streams.streams,
        lines: n,
        ..Transcript::default()
    })
}

/// A Codex rollout record, as far as a bill needs it (the rest is skipped without building
/// values).
#[derive(Deserialize)]
struct CodexRecord<'a> {
    #[serde(borrow)]
    timestamp: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<CodexPayload<'a>>,
}

#[derive(Deserialize)]
struct CodexPayload<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    role: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<std::borrow::Cow<'a, str>>,
    /// Small (two usage objects and a window size): read whole, looked into as the importer
    /// does.
    info: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The billed requests of one Codex rollout, as [`crate::import::codex`] bills them (one
/// request per `token_count` event whose running total, cache counts left out, differs from the
/// previous one; timed by the first reply item since the previous request; the model of the
/// latest `turn_context`). Only lines that can change the bill are parsed: `token_count` and
/// `turn_context` records, and reply items while the request in progress has none yet.
pub fn read_codex(path: &Path) -> Result<Transcript, AccountError> {
    let token_count = memchr::memmem::Finder::new(b"token_count");
    let turn_context = memchr::memmem::Finder::new(b"turn_context");
    let response_item = memchr::memmem::Finder::new(b"response_item");
    let mut bill = CodexBill::default();
    let mut lines = 0;
    each_line(path, |n, line| {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        lines += 1;
        let wanted = token_count.find(line).is_some()
            || turn_context.find(line).is_some()
            || (bill.first_at.is_none() && response_item.find(line).is_some());
        // A line that is not UTF-8 is skipped whole, as the importer skips it.
        if !wanted || std::str::from_utf8(line).is_err() {
            return;
        }
        if let Ok(r) = serde_json::from_slice::<CodexRecord<'_>>(line) {
            bill.record(r, n);
        }
    })?;
    Ok(codex_transcript(path, bill.items, lines))
}

/// What a Codex rollout's records have billed so far.
#[derive(Default)]
struct CodexBill {
    /// The requests billed, in order.
    items: Vec<Item>,
    /// The model of the latest `turn_context`.
    model: String,
    /// When the request in progress sent its first reply item.
    first_at: Option<u64>,
    /// The previous running total, cache counts left out (a repeat bills nothing).
    last_total: Option<serde_json::Value>,
}

impl CodexBill {
    /// Follows one record (line `n`).
    fn record(&mut self, r: CodexRecord<'_>, n: usize) {
        let Some(at_ms) = r.timestamp.as_deref().and_then(parse_time_ms) else {
            return;
        };
        let Some(p) = r.payload else { return };
        match (r.kind.as_deref(), p.kind.as_deref()) {
            (Some("turn_context"), _) => {
                if let Some(m) = p.model {
                    self.model = m.into_owned();
                }
            }
            (Some("response_item"), Some("message")) if p.role.as_deref() == Some("assistant") => {
                self.first_at.get_or_insert(at_ms);
            }
            (
                Some("response_item"),
                Some("function_call" | "custom_tool_call" | "local_shell_call" | "reasoning"),
            ) => {
                self.first_at.get_or_insert(at_ms);
            }
            (Some("event_msg"), Some("token_count")) => {
                if let Some(info) = p.info {
                    self.token_count(&info, at_ms, n);
                }
            }
            _ => {}
        }
    }

    /// A `token_count` event: a request when its running total moved.
    fn token_count(
        &mut self,
        info: &serde_json::Map<String, serde_json::Value>,
        at_ms: u64,
        n: usize,
    ) {
        let Some(u) = info.get("last_token_usage") else {
            return;
        };
        if let Some(total) = info
            .get("total_token_usage")
            .map(crate::import::codex::total_without_cache_counts)
        {
            if self.last_total.as_ref() == Some(&total) {
                return;
            }
            self.last_total = Some(total);
        }
        let Some(usage) = crate::import::codex::last_usage(u) else {
            return;
        };
        self.items.push(Item::Request(ApiRequest {
            request_id: format!("turn-{}", self.items.len() + 1),
            line: n,
            first_at_ms: self.first_at.take().unwrap_or(at_ms),
            model: self.model.clone(),
            usage,
            blocks: Vec::new(),
        }));
    }
}

/// A rollout's billed requests as a one-stream transcript.
fn codex_transcript(path: &Path, items: Vec<Item>, lines: usize) -> Transcript {
    Transcript {
        source: path.display().to_string(),
        name: path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("transcript")
            .to_string(),
        streams: vec![Stream {
            name: "main".into(),
            kind: StreamKind::Main,
            initial_mode: crate::plan_mode::Mode::Default,
            version: None,
            items,
            harness: crate::import::Harness::Codex,
        }],
        lines,
        ..Transcript::default()
    }
}
