//! Raw API request logs: read them (VCR cassettes, claude-trace JSONL, HAR 1.2, OpenTelemetry
//! JSON), rebuild every request exactly from its body (each tool definition, system block and
//! message block a segment with its own `cache_control` mark), replay the requests against the
//! breakpoint cache model and explain each read: where the body first differs from the previous
//! request of its stream, which entries that invalidates, and why the read fell.
//!
//! See docs/raw-requests.md.

pub mod as_sent;
pub mod body;
pub mod build;
pub mod diff;
pub mod explain;
pub mod export;
pub mod read;
pub mod scenario;
pub mod usage;
pub mod view;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use body::{Body, Piece};
pub use build::{build_log, BuiltLog, BuiltRequest};
pub use explain::{explain_log, Cause, ExplainRow};
pub use read::{detect_kind, read_log, LogKind};
pub use usage::{Iteration, Usage};

/// A log that cannot be read: the file, the place in it and a hint for the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {place}: {message}\n  hint: {hint}")]
pub struct LogError {
    /// The log file.
    pub file: PathBuf,
    /// Where in it: `line 12`, `interaction 3`, `entry 4`, or `file` for the whole file.
    pub place: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl LogError {
    /// An error at `place` of `file`: what is wrong and how to fix it.
    pub fn new(
        file: &Path,
        place: impl Into<String>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        LogError {
            file: file.to_path_buf(),
            place: place.into(),
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// One request/response pair as the log recorded it.
#[derive(Debug, Clone, Default)]
pub struct Exchange {
    /// Where the pair sits in the log (`interaction 2`, `line 7`, `entry 3`, `span 1`).
    pub place: String,
    /// The request URL (Bedrock puts the model here).
    pub url: String,
    /// When the request was sent, in milliseconds since the Unix epoch, if the log says.
    pub sent_at_ms: Option<u64>,
    /// When the response arrived (or began), in milliseconds since the Unix epoch, if known.
    pub received_at_ms: Option<u64>,
    /// The request body as JSON; `None` when the log kept no body (OpenTelemetry spans).
    pub body: Option<Value>,
    /// The model when no body names it (OpenTelemetry `gen_ai.request.model`).
    pub model_hint: Option<String>,
    /// The response's parsed JSON body (non-streaming), if any.
    pub response: Option<Value>,
    /// Billed usage of the response, if it carries one.
    pub usage: Option<Usage>,
    /// The provider's own verdict on a miss (`diagnostics.cache_miss_reason.type`, OpenAI's
    /// `prompt_cache_diagnostics` reason), if the response carries one.
    pub verdict: Option<String>,
    /// Token count of every block, from the `x-plancache-segment-tokens` header that
    /// `export requests` writes (then nothing is tokenized or fitted).
    pub segment_tokens: Option<Vec<u32>>,
    /// The stream, from the `x-plancache-stream` header `export requests` writes.
    pub stream_hint: Option<String>,
}

/// Reads a log, builds its requests and explains every one of them.
pub fn explain_file(
    path: &Path,
    kind: Option<LogKind>,
    prices: &crate::cache::PriceTable,
) -> Result<(BuiltLog, Vec<ExplainRow>), LogError> {
    let exchanges = read_log(path, kind)?;
    let log = build_log(path, &exchanges)?;
    let rows = explain_log(&log, prices);
    Ok((log, rows))
}
