//! The kv-cache-tester / semianalysis cc-traces JSON format.

use std::path::Path;

use serde::Deserialize;

use super::{secs_to_ms, Trace, TraceError, TraceKind, TraceRequest, TraceStream};

#[derive(Deserialize)]
struct Header {
    id: Option<String>,
    block_size: Option<u64>,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
    requests: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct Req {
    t: f64,
    #[serde(default)]
    model: String,
    #[serde(rename = "in")]
    input: u64,
    out: u64,
    hash_ids: Vec<u64>,
    #[serde(default)]
    api_time: f64,
    #[serde(default)]
    think_time: f64,
    ttft: Option<f64>,
}

#[derive(Deserialize)]
struct Sub {
    t: f64,
    agent_id: Option<String>,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
    requests: Vec<serde_json::Value>,
}

/// Parses one kv-cache-tester trace.
pub(super) fn parse(file: &Path, text: &str) -> Result<Trace, TraceError> {
    let h: Header = serde_json::from_str(text).map_err(|e| TraceError::Format {
        file: file.to_path_buf(),
        detail: e.to_string(),
    })?;
    let block_size = h.block_size.unwrap_or(64).max(1);
    let mut main = TraceStream {
        name: "main".into(),
        tool_tokens: h.tool_tokens,
        system_tokens: h.system_tokens,
        requests: Vec::new(),
    };
    let mut subs = Vec::new();
    for (index, v) in h.requests.iter().enumerate() {
        let bad = |e: serde_json::Error, hint| TraceError::Request {
            file: file.to_path_buf(),
            index,
            detail: e.to_string(),
            hint,
        };
        if v.get("type").and_then(|t| t.as_str()) == Some("subagent") {
            let s: Sub = serde_json::from_value(v.clone())
                .map_err(|e| bad(e, "a subagent entry needs `t` and `requests`"))?;
            let offset = secs_to_ms(s.t);
            let mut stream = TraceStream {
                name: s
                    .agent_id
                    .unwrap_or_else(|| format!("subagent{}", subs.len() + 1)),
                tool_tokens: s.tool_tokens,
                system_tokens: s.system_tokens,
                requests: Vec::new(),
            };
            for sv in &s.requests {
                let r: Req = serde_json::from_value(sv.clone()).map_err(|e| bad(e, REQ_HINT))?;
                stream
                    .requests
                    .push(request(r, offset, block_size, file, index)?);
            }
            subs.push(stream);
        } else {
            let r: Req = serde_json::from_value(v.clone()).map_err(|e| bad(e, REQ_HINT))?;
            main.requests.push(request(r, 0, block_size, file, index)?);
        }
    }
    let id = h.id.unwrap_or_else(|| stem(file));
    let mut streams = vec![main];
    streams.extend(subs);
    Ok(Trace {
        id,
        file: file.to_path_buf(),
        kind: TraceKind::KvCacheTester,
        block_size,
        streams,
    })
}

const REQ_HINT: &str = "each request needs `t`, `in`, `out` and `hash_ids`";

fn request(
    r: Req,
    offset_ms: u64,
    block_size: u64,
    file: &Path,
    index: usize,
) -> Result<TraceRequest, TraceError> {
    if r.hash_ids.len() as u64 * block_size > r.input + block_size {
        return Err(TraceError::Request {
            file: file.to_path_buf(),
            index,
            detail: format!(
                "{} hash blocks of {block_size} tokens exceed `in` = {}",
                r.hash_ids.len(),
                r.input
            ),
            hint: "`hash_ids` holds one id per block of `block_size` prompt tokens",
        });
    }
    Ok(TraceRequest {
        sent_at_ms: offset_ms + secs_to_ms(r.t),
        model: r.model,
        input_tokens: r.input,
        output_tokens: r.out,
        hash_ids: r.hash_ids,
        api_time_ms: secs_to_ms(r.api_time),
        ttft_ms: r.ttft.map(secs_to_ms),
        think_time_ms: secs_to_ms(r.think_time),
    })
}

pub(super) fn stem(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
