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

/// The billed requests of one Claude Code file (see the module doc).
pub fn read(path: &Path) -> Result<Transcript, String> {
    let f = std::fs::File::open(path)
        .map_err(|e| format!("{}: cannot read transcript: {e}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 16, f);
    let finder = memchr::memmem::Finder::new(b"\"usage\"");
    let mut streams = Streams::default();
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{}: cannot read transcript: {e}", path.display()))?;
        if read == 0 {
            break;
        }
        n += 1;
        if finder.find(&line).is_none() {
            continue;
        }
        if let Ok(r) = serde_json::from_slice::<Record<'_>>(&line) {
            streams.record(n, r);
        }
    }
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
