//! OpenAI Codex CLI rollouts (`~/.codex/sessions/.../rollout-*.jsonl`).
//!
//! Each line is `{timestamp, type, payload}`. `response_item` payloads are conversation items
//! (`message`, `function_call`, `function_call_output`, `reasoning`); an `event_msg` of type
//! `token_count` closes one model request and carries its usage in `info.last_token_usage`
//! (`input_tokens` including `cached_input_tokens`). `turn_context` names the model. OpenAI caches
//! automatically with no write charge, so the recorded creation is 0 and the uncached input is
//! `input_tokens - cached_input_tokens`.
//!
//! Rollout facts the parser relies on (measured on real Codex CLI rollouts, the bundled ones in
//! `tests/fixtures/real/` among them):
//! - Codex CLI 0.98 writes every `token_count` event twice. Both copies carry the same
//!   `info.total_token_usage` (the session's running total): a model call is one event whose
//!   total differs from the previous event's, so a copy with an unchanged total is dropped and
//!   the import gets one request per model call, never one per event. The comparison leaves
//!   the cached counts out (every call adds input tokens, so the rest of the total tells calls
//!   apart): what the provider billed as cached never decides what was sent. Rollouts without
//!   `total_token_usage` count every event carrying `last_token_usage`.
//! - A `compacted` record (`payload.message`: the summary) is a history compaction: Codex
//!   rebuilds the conversation from the summary but keeps its instructions prefix (base
//!   instructions and tools), so the record becomes a compaction item and the replay keeps the
//!   static prefix.
//! - Reasoning within a turn. Codex keeps every `reasoning` item (with its encrypted content) in
//!   the history it sends (openai/codex `codex-rs/core/src/context_manager/history.rs`,
//!   `for_prompt`), and the Responses API ignores the reasoning items from before the last user
//!   message (the same file counts "non-last" reasoning tokens apart because the server's usage
//!   leaves them out). So a request within a turn repeats the previous response whole, reasoning
//!   included, and reads past the previous prompt; a request that starts a new turn drops the
//!   last turn's reasoning and reads up to where that turn began. In the bundled rollouts 260 of
//!   432 requests within a turn read past the previous prompt, and 34 of 46 new turns read
//!   within one 128-token unit of the previous turn's first prompt or less.
//! - The static prefix (instructions + tools) is not in the rollout. The import sizes it from
//!   content, as for every harness: the first prompt's recorded size minus the token counts of
//!   the first messages (prompt sizes from the recorded totals are allowed in every mode). The
//!   first request's `cached_input_tokens` (a multiple of 128, written by an earlier session of
//!   the account) gives the shared prefix exactly, but it is a billed cache figure: only the
//!   `billed` events mode splits the static block there, never the default `transcript` mode.

use serde_json::Value;

use super::{
    parse_time_ms, ApiRequest, Block, Item, Skipped, Stream, StreamKind, Transcript, Usage,
};
use crate::plan_mode::Mode;

/// Parses a whole rollout. Never fails: what it cannot read is listed in `skipped`.
pub fn parse(text: &str) -> Transcript {
    parse_lines(text.lines().enumerate().map(|(i, l)| (i + 1, l)))
}

/// Parses a rollout given as its lines with their 1-based numbers (read one at a time, see
/// [`super::Harness::read`]). Never fails: what it cannot read is listed in `skipped`.
pub fn parse_lines<S: AsRef<str>>(numbered: impl IntoIterator<Item = (usize, S)>) -> Transcript {
    let mut r = Rollout::default();
    for (n, line) in numbered {
        let line = line.as_ref();
        if !line.trim().is_empty() {
            r.lines += 1;
            if let Err(reason) = r.record(n, line) {
                r.skipped.push(Skipped { line: n, reason });
            }
        }
    }
    Transcript {
        streams: vec![Stream {
            name: "main".into(),
            kind: StreamKind::Main,
            initial_mode: Mode::Default,
            version: None,
            items: r.items,
            harness: super::Harness::Codex,
        }],
        lines: r.lines,
        skipped: r.skipped,
        ..Transcript::default()
    }
}

/// A rollout being read, record by record.
#[derive(Default)]
struct Rollout {
    /// The main stream's items so far.
    items: Vec<Item>,
    /// The blocks of the model call in progress (its reply), until its `token_count` event.
    pending: Vec<Block>,
    /// When the model call in progress wrote its first block (epoch ms).
    first_at: Option<u64>,
    /// The model of the current turn (`turn_context`).
    model: String,
    /// Records not read, with why.
    skipped: Vec<Skipped>,
    /// Non-empty lines seen.
    lines: usize,
    /// Model calls counted so far (they name the requests: `turn-N`).
    requests: usize,
    /// The running total of the last counted `token_count` event (duplicates repeat it).
    last_total: Option<Value>,
}

impl Rollout {
    /// One record (line `n`); `Err` says why it is skipped.
    fn record(&mut self, n: usize, line: &str) -> Result<(), String> {
        let record: Value =
            serde_json::from_str(line).map_err(|e| format!("not a JSON record ({e})"))?;
        let at_ms = record
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_time_ms)
            .ok_or_else(|| "record without a valid `timestamp`".to_string())?;
        let payload = record.get("payload").unwrap_or(&Value::Null);
        match record.get("type").and_then(Value::as_str) {
            Some("session_meta") => {}
            Some("compacted") => {
                let summary = str_field(payload, "message").to_string();
                self.items.push(Item::Compaction { summary, at_ms });
            }
            Some("turn_context") => {
                if let Some(m) = payload.get("model").and_then(Value::as_str) {
                    self.model = m.to_string();
                }
            }
            Some("response_item") => self.response_item(payload, at_ms)?,
            Some("event_msg") => self.event(n, payload, at_ms)?,
            other => return Err(format!("record type {other:?} is not interpreted")),
        }
        Ok(())
    }

    fn response_item(&mut self, payload: &Value, at_ms: u64) -> Result<(), String> {
        match str_field(payload, "type") {
            "message" => self.message(payload, at_ms),
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                self.first_at.get_or_insert(at_ms);
                self.pending.push(tool_call(payload));
            }
            "function_call_output" | "custom_tool_call_output" => {
                let text = match payload.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                self.items.push(Item::ToolResult {
                    tool_use_id: str_field(payload, "call_id").to_string(),
                    text,
                    is_error: false,
                    at_ms,
                });
            }
            "reasoning" => {
                self.first_at.get_or_insert(at_ms);
                self.pending.push(Block::Thinking(String::new()));
            }
            other => return Err(format!("response item `{other}` is not interpreted")),
        }
        Ok(())
    }

    fn message(&mut self, payload: &Value, at_ms: u64) {
        let text = payload
            .get("content")
            .and_then(Value::as_array)
            .map(|bs| {
                bs.iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        match payload.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                self.first_at.get_or_insert(at_ms);
                self.pending.push(Block::Text(text));
            }
            // Only a user message starts a turn; developer and system messages (permission and
            // environment updates) are text like a reminder.
            Some("user") => self.items.push(Item::User { text, at_ms }),
            role => self.items.push(Item::Reminder {
                kind: role.unwrap_or("message").to_string(),
                text,
                at_ms,
            }),
        }
    }

    /// An `event_msg`: only `token_count` events matter (UI events such as `agent_message` or
    /// the `user_message` echo repeat items); each counted one ends a model call.
    fn event(&mut self, n: usize, payload: &Value, at_ms: u64) -> Result<(), String> {
        if str_field(payload, "type") != "token_count" {
            return Ok(());
        }
        let info = payload.get("info");
        // Rate-limit-only token_count events carry no usage.
        let Some(u) = info.and_then(|i| i.get("last_token_usage")) else {
            return Ok(());
        };
        // The second copy of a doubled event: same running total, same model call.
        if let Some(total) = info
            .and_then(|i| i.get("total_token_usage"))
            .map(total_without_cache_counts)
        {
            if self.last_total.as_ref() == Some(&total) {
                return Ok(());
            }
            self.last_total = Some(total);
        }
        let usage =
            last_usage(u).ok_or_else(|| "token_count without `input_tokens`".to_string())?;
        self.requests += 1;
        self.items.push(Item::Request(ApiRequest {
            request_id: format!("turn-{}", self.requests),
            line: n,
            first_at_ms: self.first_at.take().unwrap_or(at_ms),
            model: self.model.clone(),
            usage,
            blocks: std::mem::take(&mut self.pending),
        }));
        Ok(())
    }
}

/// A string field of a JSON object ("" when absent or not a string).
fn str_field<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A call block: function, custom tool or local shell call (named `shell` when unnamed).
fn tool_call(payload: &Value) -> Block {
    let input = match payload.get("arguments").or_else(|| payload.get("input")) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => payload
            .get("action")
            .map(Value::to_string)
            .unwrap_or_default(),
    };
    let name = match str_field(payload, "name") {
        "" => "shell",
        n => n,
    };
    Block::ToolUse {
        id: str_field(payload, "call_id").to_string(),
        name: name.to_string(),
        input,
    }
}

/// A running total without its cache counts (`cached_input_tokens`, ...), to tell a repeated
/// `token_count` event from the next model call.
/// What a `token_count` event's `last_token_usage` bills: the cached part of the input read,
/// the rest uncached (OpenAI reports no writes); `None` without `input_tokens`.
pub fn last_usage(u: &Value) -> Option<Usage> {
    let get = |k: &str| u.get(k).and_then(Value::as_u64);
    let input = get("input_tokens")?;
    let cached = get("cached_input_tokens").unwrap_or(0).min(input);
    Some(Usage {
        input_tokens: input - cached,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
        creation_5m: None,
        creation_1h: None,
        output_tokens: get("output_tokens").unwrap_or(0),
        reasoning_tokens: get("reasoning_output_tokens").unwrap_or(0),
    })
}

/// A running total without its cache counts: a doubled event repeats it, cache counts aside.
pub fn total_without_cache_counts(total: &Value) -> Value {
    match total {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(k, _)| !k.contains("cached"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}
