//! Billed usage of one response, from a parsed JSON body or a server-sent-events stream.
//!
//! Field names, as the providers document them:
//! - Anthropic Messages `usage`: `input_tokens` (after the last cache breakpoint),
//!   `cache_creation_input_tokens`, `cache_read_input_tokens`, `cache_creation.
//!   ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`, and with server-side compaction
//!   `iterations[]` (`type` `compaction` or `message`, each with the same counts)
//!   (platform.claude.com/docs/en/build-with-claude/prompt-caching, "Tracking cache
//!   performance"; /compaction). Streaming: `message_start.message.usage`, then `message_delta.
//!   usage`, whose counts are cumulative (/build-with-claude/streaming).
//! - OpenAI Chat Completions (and OpenRouter): `usage.prompt_tokens` (the whole prompt),
//!   `usage.prompt_tokens_details.cached_tokens`; OpenRouter adds `prompt_tokens_details.
//!   cache_write_tokens` (openrouter.ai/docs, "Prompt caching"; the cassettes show it).
//! - OpenAI Responses: `usage.input_tokens` (the whole prompt), `usage.input_tokens_details.
//!   cached_tokens`.

use serde_json::Value;

/// One pass of the model over a prompt (Anthropic `usage.iterations[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Iteration {
    /// `compaction` (the server summarised the context) or `message` (the reply).
    pub kind: String,
    /// Tokens after the last breakpoint (not read, not written).
    pub input: u64,
    /// Tokens written to the cache.
    pub creation: u64,
    /// Tokens read from the cache.
    pub read: u64,
}

impl Iteration {
    /// The whole prompt of this pass.
    pub fn prompt(&self) -> u64 {
        // Saturating: a log's figures are untrusted; a sum past u64 is refused by the budget.
        self.input
            .saturating_add(self.creation)
            .saturating_add(self.read)
    }
}

/// Billed usage of one response, normalised to disjoint parts.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Prompt tokens neither read nor written (Anthropic `input_tokens`).
    pub input: u64,
    /// Prompt tokens written to the cache (all TTLs).
    pub creation: u64,
    /// Of `creation`, the tokens written with a 1 h TTL.
    pub creation_1h: u64,
    /// Prompt tokens read from the cache.
    pub read: u64,
    /// Output tokens.
    pub output: u64,
    /// Server-side passes (compaction, then the message), when the response lists them.
    pub iterations: Vec<Iteration>,
}

impl Usage {
    /// The billed prompt: input + cache creation + cache read.
    pub fn prompt(&self) -> u64 {
        // Saturating: a log's figures are untrusted; a sum past u64 is refused by the budget.
        self.input
            .saturating_add(self.creation)
            .saturating_add(self.read)
    }

    /// Reads a `usage` object of any of the documented shapes.
    pub fn from_value(u: &Value) -> Option<Usage> {
        let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let obj = u.as_object()?;
        if obj.contains_key("prompt_tokens") {
            // Chat Completions: prompt_tokens includes the cached and written tokens.
            let det = u
                .get("prompt_tokens_details")
                .cloned()
                .unwrap_or(Value::Null);
            let read = n(&det, "cached_tokens");
            let creation = n(&det, "cache_write_tokens");
            let prompt = n(u, "prompt_tokens");
            return Some(Usage {
                input: prompt.saturating_sub(read + creation),
                creation,
                creation_1h: 0,
                read,
                output: n(u, "completion_tokens"),
                iterations: Vec::new(),
            });
        }
        if let Some(det) = u.get("input_tokens_details") {
            // Responses: input_tokens includes the cached tokens.
            let read = n(det, "cached_tokens");
            return Some(Usage {
                input: n(u, "input_tokens").saturating_sub(read),
                read,
                output: n(u, "output_tokens"),
                ..Usage::default()
            });
        }
        if !obj.contains_key("input_tokens") && !obj.contains_key("cache_read_input_tokens") {
            return None;
        }
        let iterations = u
            .get("iterations")
            .and_then(Value::as_array)
            .map(|its| {
                its.iter()
                    .map(|it| Iteration {
                        kind: it
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("message")
                            .to_string(),
                        input: n(it, "input_tokens"),
                        creation: n(it, "cache_creation_input_tokens"),
                        read: n(it, "cache_read_input_tokens"),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let creation_1h = u
            .get("cache_creation")
            .map(|c| n(c, "ephemeral_1h_input_tokens"))
            .unwrap_or(0);
        Some(Usage {
            input: n(u, "input_tokens"),
            creation: n(u, "cache_creation_input_tokens"),
            creation_1h,
            read: n(u, "cache_read_input_tokens"),
            output: n(u, "output_tokens"),
            iterations,
        })
    }

    /// The usage of a server-sent-events body: `message_start`'s, overridden field by field by
    /// the (cumulative) `message_delta` usage; or the last event's OpenAI-style `usage`.
    pub fn from_sse(text: &str) -> Option<Usage> {
        let mut merged: Option<serde_json::Map<String, Value>> = None;
        for line in text.lines() {
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let Ok(ev) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            let u = match ev.get("type").and_then(Value::as_str) {
                Some("message_start") => ev.get("message").and_then(|m| m.get("usage")),
                Some("response.completed") => ev.get("response").and_then(|r| r.get("usage")),
                _ => ev.get("usage"),
            };
            if let Some(Value::Object(u)) = u {
                let m = merged.get_or_insert_with(Default::default);
                for (k, v) in u {
                    if !v.is_null() {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        merged.and_then(|m| Usage::from_value(&Value::Object(m)))
    }

    /// Bedrock's usage headers (`x-amzn-bedrock-input-token-count`, `-cache-read-`,
    /// `-cache-write-`), when the body carries none.
    pub fn from_bedrock_headers(h: &dyn Fn(&str) -> Option<u64>) -> Option<Usage> {
        let input = h("x-amzn-bedrock-input-token-count")?;
        Some(Usage {
            input,
            creation: h("x-amzn-bedrock-cache-write-input-token-count").unwrap_or(0),
            read: h("x-amzn-bedrock-cache-read-input-token-count").unwrap_or(0),
            output: h("x-amzn-bedrock-output-token-count").unwrap_or(0),
            ..Usage::default()
        })
    }
}

/// The provider's own verdict on a cache miss, when the response carries one: Anthropic's cache
/// diagnostics beta (`diagnostics.cache_miss_reason.type`: `model_changed`, `system_changed`,
/// `tools_changed`, `messages_changed`, `previous_message_not_found`, `unavailable`;
/// platform.claude.com/docs/en/build-with-claude/cache-diagnostics) or OpenAI's prompt-cache
/// diagnostics (`prompt_cache_diagnostics` with `type: cache_miss`, `reason`,
/// `cache_missed_tokens`; the openai SDKs' `PromptCacheDiagnostics::CacheMiss`).
pub fn verdict(response: &Value) -> Option<String> {
    if let Some(r) = response
        .get("diagnostics")
        .and_then(|d| d.get("cache_miss_reason"))
        .filter(|r| !r.is_null())
    {
        let kind = r.get("type").and_then(Value::as_str).unwrap_or("unknown");
        return Some(
            match r.get("cache_missed_input_tokens").and_then(Value::as_u64) {
                Some(n) => format!("{kind} ({n} tokens missed)"),
                None => kind.to_string(),
            },
        );
    }
    let d = response.get("prompt_cache_diagnostics")?;
    let reason = d
        .get("reason")
        .or_else(|| d.get("cache_miss").and_then(|m| m.get("reason")))
        .and_then(Value::as_str)?;
    Some(match d.get("cache_missed_tokens").and_then(Value::as_u64) {
        Some(n) => format!("{reason} ({n} tokens missed)"),
        None => reason.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_past_u64_saturates_instead_of_overflowing() {
        let u = Usage {
            input: u64::MAX,
            creation: 5,
            read: 7,
            ..Usage::default()
        };
        assert_eq!(u.prompt(), u64::MAX);
        let i = Iteration {
            input: 2,
            creation: u64::MAX - 1,
            read: 9,
            ..Iteration::default()
        };
        assert_eq!(i.prompt(), u64::MAX);
        let small = Usage {
            input: 1,
            creation: 2,
            read: 3,
            ..Usage::default()
        };
        assert_eq!(small.prompt(), 6);
    }
}
