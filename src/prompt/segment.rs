use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::TokenId;

/// Stable identity of a segment's content: equal ids mean equal bytes in the prompt.
pub type ContentId = u64;

/// The three levels of a prompt, in prompt order. A change at one level invalidates that level and
/// every later one (Anthropic documents it so; every prefix cache behaves so by construction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The tool definitions.
    Tools,
    /// The system prompt.
    System,
    /// The conversation.
    Messages,
}

impl Level {
    /// The level's name in break reasons (`tools`, `system`, `messages`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Tools => "tools",
            Level::System => "system",
            Level::Messages => "messages",
        }
    }
}

/// Who a message block belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user's turn (including tool results).
    User,
    /// The model's reply (text and tool calls).
    Assistant,
}

/// What a segment is, for explanations ("the reuse stopped at tool:Edit").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SegmentKind {
    /// One tool definition.
    Tool,
    /// One system prompt block.
    System,
    /// One message content block (text, tool use, tool result).
    Message(Role),
    /// A harness reminder in a user message, placed after the request's message breakpoint
    /// (Claude Code's `<system-reminder>` attachments).
    Reminder,
}

/// Lifetime of a cache entry written at a breakpoint.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum Ttl {
    /// Five minutes, the default class.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour.
    #[serde(rename = "1h")]
    OneHour,
}

impl Ttl {
    /// The lifetime in milliseconds.
    pub fn millis(self) -> u64 {
        match self {
            Ttl::FiveMinutes => 5 * 60 * 1000,
            Ttl::OneHour => 60 * 60 * 1000,
        }
    }
    /// The class as scenario files and outputs write it (`5m`, `1h`).
    pub fn as_str(self) -> &'static str {
        match self {
            Ttl::FiveMinutes => "5m",
            Ttl::OneHour => "1h",
        }
    }
}

/// One piece of a prompt: a tool definition, a system block or a message block.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Equal ids mean byte-identical content (and so identical tokens).
    pub id: ContentId,
    /// The prompt level it belongs to.
    pub level: Level,
    /// What it is, for explanations.
    pub kind: SegmentKind,
    /// Short human label used in explanations, e.g. `tool:Edit`, `system#1`, `step7:result:Read`.
    pub label: String,
    /// Its tokens, shared by every request that carries the segment.
    pub tokens: Arc<[TokenId]>,
    /// An explicit cache breakpoint placed on this block by the scenario (Anthropic-style models
    /// use it when their layout is `explicit`; automatic caches ignore it).
    pub breakpoint: Option<Ttl>,
}

impl Segment {
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }
    /// Whether it has no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Request parameters that are not prompt bytes but still invalidate cached prefixes at a level
/// (Anthropic: `tool_choice` and thinking settings invalidate the messages level; web search,
/// citations and `speed` invalidate system and messages).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RequestSettings {
    /// The request's `tool_choice`, when it sets one (invalidates the messages).
    pub tool_choice: Option<String>,
    /// The extended-thinking budget in tokens, when thinking is on (invalidates the
    /// messages).
    pub thinking_budget: Option<u32>,
    /// Web search enabled (invalidates system and messages).
    pub web_search: bool,
    /// Citations enabled (invalidates system and messages).
    pub citations: bool,
    /// Fast mode, Anthropic's `speed` setting (invalidates system and messages).
    pub fast: bool,
    /// The cache TTL class the harness asks for in this request (a scenario's `ttl`), which
    /// breakpoint caches write where their configuration names none for the stream. Not part
    /// of any level's salt: a TTL class is not prompt content.
    pub cache_ttl: Option<Ttl>,
}

/// One API request: the full prompt as segments, plus what the cache models need to know about it.
#[derive(Debug, Clone)]
pub struct Request {
    /// Index of the request within its replay (0-based, in send order across streams).
    pub index: usize,
    /// Request stream: `main`, or a subagent's name. Each stream is one conversation.
    pub stream: String,
    /// Scenario step (0-based) that produced the request.
    pub step: usize,
    /// Model that serves the request; caches are per model.
    pub model: String,
    /// Simulated time at which the request is sent, in milliseconds since the session start.
    pub sent_at_ms: u64,
    /// Tools, then system, then messages, in prompt order.
    pub segments: Vec<Arc<Segment>>,
    /// Parameters that are not prompt bytes but invalidate cached levels.
    pub settings: RequestSettings,
    /// Visible reply blocks (text and tool calls) that the next request of the stream repeats.
    /// Automatic caches (OpenAI, vLLM, SGLang) hold these tokens after the request completes.
    pub reply: Vec<Arc<Segment>>,
    /// All generated tokens, visible reply plus reasoning (billed as output).
    pub output_tokens: u64,
}

impl Request {
    /// Total prompt length in tokens.
    pub fn prompt_tokens(&self) -> u64 {
        self.segments.iter().map(|s| s.len() as u64).sum()
    }

    /// Iterates over every prompt token in order.
    pub fn tokens(&self) -> impl Iterator<Item = TokenId> + '_ {
        self.segments.iter().flat_map(|s| s.tokens.iter().copied())
    }

    /// Index of the first segment at `level` or later, or `segments.len()`.
    pub fn first_segment_at(&self, level: Level) -> usize {
        self.segments
            .iter()
            .position(|s| s.level >= level)
            .unwrap_or(self.segments.len())
    }

    /// The segment containing token position `pos` (0-based), if any.
    pub fn segment_at_token(&self, pos: u64) -> Option<&Arc<Segment>> {
        let mut start = 0u64;
        for seg in &self.segments {
            let end = start + seg.len() as u64;
            if pos < end {
                return Some(seg);
            }
            start = end;
        }
        None
    }
}
