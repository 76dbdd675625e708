//! Mooncake-style JSONL traces (the shape `plancache export mooncake` writes).

use std::path::Path;

use serde::Deserialize;

use super::{StreamBuilder, Trace, TraceError, TraceKind, TraceRequest};

#[derive(Deserialize)]
struct Line {
    /// Milliseconds after the first request.
    timestamp: u64,
    input_length: u64,
    output_length: u64,
    hash_ids: Vec<u64>,
}

/// Block size assumed for Mooncake traces, which do not record it (Mooncake's own traces use 512;
/// `plancache export mooncake` defaults to the same).
pub const MOONCAKE_BLOCK_SIZE: u64 = 512;

/// Parses one Mooncake JSONL trace as a single `main` stream.
pub(super) fn parse(file: &Path, text: &str) -> Result<Trace, TraceError> {
    let mut stream = StreamBuilder::new("main".into(), 0, 0);
    for (index, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let l: Line = serde_json::from_str(line).map_err(|e| TraceError::Request {
            file: file.to_path_buf(),
            index,
            detail: e.to_string(),
            hint: "each line needs `timestamp`, `input_length`, `output_length`, `hash_ids`",
        })?;
        if let Some(prev) = stream.last().map(|r| r.sent_at_ms) {
            if l.timestamp < prev {
                return Err(TraceError::Request {
                    file: file.to_path_buf(),
                    index,
                    detail: format!("timestamp {} is before the previous {prev}", l.timestamp),
                    hint: "lines must be in send order",
                });
            }
        }
        let request = TraceRequest {
            sent_at_ms: l.timestamp,
            model: String::new(),
            input_tokens: l.input_length,
            output_tokens: l.output_length,
            hash_ids: Default::default(),
            api_time_ms: 0,
            ttft_ms: None,
            think_time_ms: 0,
        };
        stream.push(request, &l.hash_ids, "");
    }
    Ok(Trace {
        id: super::kvct::stem(file),
        file: file.to_path_buf(),
        kind: TraceKind::Mooncake,
        block_size: MOONCAKE_BLOCK_SIZE,
        streams: vec![stream.finish()],
    })
}
