//! Block-hash request traces: the kv-cache-tester / semianalysis JSON format and Mooncake JSONL.
//!
//! A trace is one agent session as a list of streams (the main conversation and its subagents).
//! Each request carries its send time, its input and output sizes and its prompt as block hashes:
//! equal hashes at equal positions mean equal prompt blocks, so two requests of a stream share a
//! prefix exactly as long as their leading run of equal hash ids.
//!
//! Formats (detected from the content, not the file name):
//! - kv-cache-tester: one JSON object with a header (`id`, `block_size`, `tool_tokens`,
//!   `system_tokens`) and `requests`; each request has `t` (s), `in`, `out`, `hash_ids`,
//!   `api_time`, `think_time`; an entry of `type` `subagent` nests its own `requests`, whose `t`
//!   is relative to the subagent's start.
//! - Mooncake JSONL: one object per line with `timestamp` (ms), `input_length`, `output_length`,
//!   `hash_ids` (what `plancache export mooncake` writes, see `crate::mooncake`); one stream.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use ids::HashIds;
use ids::StreamIds;

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The trace file.
        file: PathBuf,
        /// The error the system gave.
        source: std::io::Error,
    },
    /// The file is neither a kv-cache-tester JSON trace nor Mooncake JSONL.
    #[error("{file}: not a block-hash trace: {detail} (hint: expected a kv-cache-tester JSON object with `requests`, or Mooncake JSONL lines with `timestamp`, `input_length`, `output_length`, `hash_ids`)")]
    Format {
        /// The trace file.
        file: PathBuf,
        /// What the parser found instead.
        detail: String,
    },
    /// One request of an otherwise readable trace is malformed.
    #[error("{file}: request {index}: {detail} (hint: {hint})")]
    Request {
        /// The trace file.
        file: PathBuf,
        /// The request's 0-based index in the trace (Mooncake: among its non-empty lines).
        index: usize,
        /// What is wrong with it.
        detail: String,
        /// How to fix it.
        hint: &'static str,
    },
}

impl TraceError {
    /// Every trace error is bad input (exit code 2).
    pub fn exit_code(&self) -> i32 {
        2
    }
}

/// Which format a trace was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    /// callanjfox/kv-cache-tester (semianalysis cc-traces) JSON.
    KvCacheTester,
    /// Mooncake-style JSONL.
    Mooncake,
}

/// One request of a trace stream.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Send time in ms since the session start.
    pub sent_at_ms: u64,
    /// Model that served the request (empty when the trace does not say).
    pub model: String,
    /// Prompt length in tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// One id per full block of the prompt, in prompt order (kept once per stream: see
    /// [`HashIds`]).
    pub hash_ids: HashIds,
    /// Time from send to the last output token, in ms (0 when the trace does not say).
    pub api_time_ms: u64,
    /// Time-to-first-token in ms when recorded.
    pub ttft_ms: Option<u64>,
    /// Idle time before this request (tool execution and human think time), in ms.
    pub think_time_ms: u64,
}

impl TraceRequest {
    /// When the response is complete: send time plus `api_time`.
    pub fn finished_at_ms(&self) -> u64 {
        self.sent_at_ms + self.api_time_ms
    }
}

/// One conversation of a trace: `main` or a subagent.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStream {
    /// `main`, or the subagent's `agent_id`.
    pub name: String,
    /// Tool-definition tokens at the head of every prompt of this stream.
    pub tool_tokens: u64,
    /// System-prompt tokens after the tools.
    pub system_tokens: u64,
    /// Requests in send order.
    pub requests: Vec<TraceRequest>,
}

/// One session read from a trace file.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Trace id (the header's `id`, else the file stem).
    pub id: String,
    /// The file it was read from.
    pub file: PathBuf,
    /// The format detected.
    pub kind: TraceKind,
    /// Tokens per hash block.
    pub block_size: u64,
    /// The main stream first, then subagents in order of appearance.
    pub streams: Vec<TraceStream>,
}

/// A stream as its requests are read: each request's ids are kept apart, in the stream's
/// shared buffer, until the stream is complete.
struct StreamBuilder<'a> {
    /// The stream, its requests with their ids still to be given.
    stream: TraceStream,
    /// Their ids.
    ids: StreamIds,
    /// The JSON text the last request's ids were read from (empty: not known).
    text: &'a str,
}

impl<'a> StreamBuilder<'a> {
    /// An empty stream.
    fn new(name: String, tool_tokens: u64, system_tokens: u64) -> Self {
        StreamBuilder {
            stream: TraceStream {
                name,
                tool_tokens,
                system_tokens,
                requests: Vec::new(),
            },
            ids: StreamIds::default(),
            text: "",
        }
    }

    /// Reads the next request's ids from the JSON text of their array into `out`, past the
    /// text it shares with the previous request's (see [`ids::read_json_ids`]), or else with
    /// serde_json; false when the text is not an array of unsigned 64-bit integers.
    fn read_ids(&self, text: &str, out: &mut Vec<u64>) -> bool {
        ids::read_json_ids(text, (self.text, self.ids.last()), out)
            || serde_json::from_str::<Vec<u64>>(text)
                .map(|v| *out = v)
                .is_ok()
    }

    /// Adds the next request, whose ids are `ids`, read from the JSON text `text` (empty: not
    /// read from JSON text); its own `hash_ids` are set by [`StreamBuilder::finish`].
    fn push(&mut self, request: TraceRequest, ids: &[u64], text: &'a str) {
        self.ids.push(ids);
        self.text = text;
        self.stream.requests.push(request);
    }

    /// The last request added.
    fn last(&self) -> Option<&TraceRequest> {
        self.stream.requests.last()
    }

    /// The stream, each request with its ids.
    fn finish(self) -> TraceStream {
        let mut stream = self.stream;
        for (r, ids) in stream.requests.iter_mut().zip(self.ids.finish()) {
            r.hash_ids = ids;
        }
        stream
    }
}

impl Trace {
    /// Number of requests over all streams.
    pub fn request_count(&self) -> usize {
        self.streams.iter().map(|s| s.requests.len()).sum()
    }
}

mod ids;
mod kvct;
mod mooncake_jsonl;
pub mod prefix;
pub mod scenario;

/// Reads one trace file, detecting its format.
pub fn read(file: &Path) -> Result<Trace, TraceError> {
    read_as(file, None)
}

/// Reads one trace file as `kind` (`None`: detected from the content).
pub fn read_as(file: &Path, kind: Option<TraceKind>) -> Result<Trace, TraceError> {
    let text = std::fs::read_to_string(file).map_err(|source| TraceError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    match kind {
        Some(TraceKind::KvCacheTester) => return kvct::parse(file, &text),
        Some(TraceKind::Mooncake) => return mooncake_jsonl::parse(file, &text),
        None => {}
    }
    let first = text.trim_start();
    let is_object = first.starts_with('{');
    // A well-formed kv-cache-tester file is read in one pass; anything else is told apart below
    // (and a kv-cache-tester file with an error is read again to name the request at fault).
    if is_object {
        if let Some(trace) = kvct::parse_if_well_formed(file, &text) {
            return trace;
        }
    }
    // A single JSON object with `requests` is kv-cache-tester; anything line-shaped is Mooncake.
    let whole = if is_object {
        serde_json::from_str::<serde_json::Value>(first).ok()
    } else {
        None
    };
    if let Some(v) = whole {
        if v.get("requests").is_some() {
            return kvct::parse_slow(file, &text);
        }
        if v.get("hash_ids").is_none() {
            return Err(TraceError::Format {
                file: file.to_path_buf(),
                detail: "a JSON object without `requests` or `hash_ids`".into(),
            });
        }
    }
    if is_object {
        return mooncake_jsonl::parse(file, &text);
    }
    Err(TraceError::Format {
        file: file.to_path_buf(),
        detail: "the content does not start with a JSON object".into(),
    })
}

/// Reads a file, or every `*.json` / `*.jsonl` file of a directory (sorted by name).
pub fn read_path(path: &Path) -> Result<Vec<Trace>, TraceError> {
    read_path_as(path, None)
}

/// As [`read_path`], every file read as `kind` (`None`: detected per file).
pub fn read_path_as(path: &Path, kind: Option<TraceKind>) -> Result<Vec<Trace>, TraceError> {
    if !path.is_dir() {
        return Ok(vec![read_as(path, kind)?]);
    }
    let io = |source| TraceError::Io {
        file: path.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "jsonl")
            )
        })
        .collect();
    files.sort();
    // Parsed in parallel; the first error in name order is the one reported, as when they
    // were read one after another.
    let read: Vec<Result<Trace, TraceError>> = files.par_iter().map(|f| read_as(f, kind)).collect();
    read.into_iter().collect()
}

/// Seconds (as in kv-cache-tester) to whole milliseconds, rounded.
fn secs_to_ms(s: f64) -> u64 {
    (s * 1000.0).round().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files of a directory are parsed in parallel, but the error reported is still the first
    /// bad file in name order, and good files come back in name order.
    #[test]
    fn a_directory_reports_its_first_bad_file_by_name() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let good =
            r#"{"timestamp": 0, "input_length": 128, "output_length": 8, "hash_ids": [1, 2]}"#;
        for name in ["c.jsonl", "a.jsonl"] {
            std::fs::write(dir.path().join(name), format!("{good}\n")).expect("written");
        }
        assert_eq!(read_path(dir.path()).expect("both read").len(), 2);
        for name in ["d.json", "b.json"] {
            std::fs::write(dir.path().join(name), "[1, 2]").expect("written");
        }
        let err = read_path(dir.path()).expect_err("two bad files");
        match err {
            TraceError::Format { file, .. } => assert!(file.ends_with("b.json"), "{file:?}"),
            other => panic!("unexpected error: {other}"),
        }
    }
}
