//! Importing real agent sessions: a harness's transcript becomes a [`Transcript`] (streams of API
//! requests with the usage the provider billed), and a transcript becomes scenarios.
//!
//! Parsers (one file per harness) only read records; [`scenario`] turns the neutral
//! representation into scenario files, deriving every size the transcript does not state from the
//! recorded usage so that replayed prompt sizes match what was billed.

pub mod claude_code;
pub mod codex;
pub mod discover;
mod error;
pub mod scenario;
pub mod tool_sizes;

use std::fmt;

use crate::plan_mode::Mode;
use crate::prompt::Ttl;

pub use error::ImportError;
pub use scenario::{
    build_scenarios, build_scenarios_with, check_sizes, is_fork, Events, ImportOptions,
    ImportedScenario, TtlChoice,
};

/// One session read from a harness's log.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// Where it came from (file path), for messages and scenario names.
    pub source: String,
    /// Short name for scenario names (file stem).
    pub name: String,
    /// Request streams: the main conversation first, then subagents in order of appearance.
    pub streams: Vec<Stream>,
    /// Lines that were read.
    pub lines: usize,
    /// When each request's last record was written (request id -> ms since the epoch): the
    /// response finished then, and a cache entry's TTL runs from there.
    pub finished_at_ms: std::collections::HashMap<String, u64>,
    /// Records that could not be interpreted, with their line and why.
    pub skipped: Vec<Skipped>,
}

/// A record the importer could not interpret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// 1-based line number.
    pub line: usize,
    /// Why it was skipped.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// Whether a stream is the user's conversation or a subagent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// The user's conversation.
    Main,
    /// A subagent's conversation (one invocation).
    Agent,
}

/// One conversation with its own prompt (the main thread, or one subagent invocation).
#[derive(Debug, Clone)]
pub struct Stream {
    /// `main`, `agent-1`, `agent-2`, ...
    pub name: String,
    /// The user's conversation or a subagent's.
    pub kind: StreamKind,
    /// Permission mode at the stream's start (the first one recorded; `default` when none is).
    pub initial_mode: Mode,
    /// The harness version its records name (Claude Code's `version` field), when they do: it
    /// tells which TTL the harness asks for (see [`harness_ttl`]).
    pub version: Option<String>,
    /// Everything that happened in this stream, in log order.
    pub items: Vec<Item>,
    /// The harness that wrote the stream: what it re-sends decides how its prompts continue
    /// (see [`Harness::reasoning_in_turn`], [`Harness::shrink_restarts`]).
    pub harness: Harness,
}

impl Stream {
    /// The stream's API requests, in log order.
    pub fn requests(&self) -> impl Iterator<Item = &ApiRequest> {
        self.items.iter().filter_map(|i| match i {
            Item::Request(r) => Some(r),
            _ => None,
        })
    }
}

/// One event of a stream.
#[derive(Debug, Clone)]
pub enum Item {
    /// Text the user (or the harness on the user's behalf) added to the conversation.
    User {
        /// The message's text.
        text: String,
        /// When it was logged (ms since the Unix epoch).
        at_ms: u64,
    },
    /// A harness reminder that reaches the API as text in the next user message
    /// (plan-mode attachments).
    Reminder {
        /// The attachment's type (`plan_mode`, `plan_mode_exit`, ...).
        kind: String,
        /// What the harness renders into it (the attachment's fields as JSON).
        text: String,
        /// When it was logged (ms since the Unix epoch).
        at_ms: u64,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the call it answers.
        tool_use_id: String,
        /// The result's text.
        text: String,
        /// Whether the tool reported an error (a denied call, a failed command).
        is_error: bool,
        /// When it was logged (ms since the Unix epoch).
        at_ms: u64,
    },
    /// The permission mode the user switched to.
    Mode {
        /// The mode switched to.
        mode: Mode,
        /// When it was logged (ms since the Unix epoch).
        at_ms: u64,
    },
    /// The conversation was compacted: it restarts from this summary.
    Compaction {
        /// The summary's text, the new conversation's first message.
        summary: String,
        /// When it was logged (ms since the Unix epoch).
        at_ms: u64,
    },
    /// The harness changed a part of the prompt before the conversation's tail (a memory or
    /// instructions file re-read into the early context, tools added to the tools array).
    PrefixChange {
        /// Which part of the prompt changed.
        change: PrefixChange,
        /// What the record said, for notes.
        what: String,
        /// When it was logged (ms since the Unix epoch).
        at_ms: u64,
    },
    /// Old tool results cleared in place (microcompaction): the prompt shrinks, the prefix before
    /// the first cleared result survives.
    Cleared {
        /// The ids of the calls whose results were cleared.
        tool_use_ids: Vec<String>,
        /// When it was logged (ms since the Unix epoch).
        at_ms: u64,
    },
    /// A request the harness sent that the log holds no assistant record of (an API error and
    /// its retry, a summary made while the user was away, a request interrupted before its first
    /// block, a fork at a turn's end): it re-sent the prompt and refreshed the cache.
    Unlogged {
        /// What it was, for notes (`a request interrupted before its first block`, ...).
        why: String,
        /// It ended with a message of its own after the conversation (the away summary's
        /// instruction, a failed attempt's tail): what it wrote past the conversation is read
        /// by no later request. Without one (an interrupted request, which was the
        /// conversation's own next request; a fork whose breakpoint is the conversation's last
        /// message) its entry ends at the conversation's last message and the next request
        /// reads through it.
        instruction: bool,
        /// When it was sent (ms since the Unix epoch).
        at_ms: u64,
    },
    /// One API request and its response.
    Request(ApiRequest),
}

impl Item {
    /// When the event was logged (a request: its first response record), in ms since
    /// the Unix epoch.
    pub fn at_ms(&self) -> u64 {
        match self {
            Item::User { at_ms, .. }
            | Item::Reminder { at_ms, .. }
            | Item::ToolResult { at_ms, .. }
            | Item::Mode { at_ms, .. }
            | Item::Compaction { at_ms, .. }
            | Item::PrefixChange { at_ms, .. }
            | Item::Cleared { at_ms, .. }
            | Item::Unlogged { at_ms, .. } => *at_ms,
            Item::Request(r) => r.first_at_ms,
        }
    }
}

/// Where a harness changed the prompt ahead of its tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixChange {
    /// The tools array changed (an MCP server connected): the prefix breaks at the tools.
    Tools,
    /// The early context block (memory and instruction files) changed: the prefix breaks after
    /// tools and system.
    EarlyContext,
}

/// The cache counters the provider billed for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached input after the last breakpoint.
    pub input_tokens: u64,
    /// Tokens written to the cache (both TTL classes).
    pub cache_creation_input_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Split of the creation by TTL, when recorded.
    pub creation_5m: Option<u64>,
    /// The 1 h share of the creation, when recorded.
    pub creation_1h: Option<u64>,
    /// Often a streaming placeholder in Claude Code logs: not relied upon.
    pub output_tokens: u64,
    /// Part of `output_tokens` spent on reasoning, when recorded (Codex
    /// `reasoning_output_tokens`): billed, but not repeated in the next prompt.
    pub reasoning_tokens: u64,
}

impl Usage {
    /// The whole prompt: read + written + uncached input.
    pub fn prompt_tokens(&self) -> u64 {
        // Saturating: corrupt counts are rejected by `scenario::check_sizes`, never a panic.
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }

    /// The written tokens split as (5 m, 1 h); with no split recorded, all of them 5 m.
    pub fn creation_split(&self) -> (u64, u64) {
        match (self.creation_5m, self.creation_1h) {
            (Some(a), Some(b)) => (a, b),
            (Some(a), None) => (a, 0),
            (None, Some(b)) => (0, b),
            (None, None) => (self.cache_creation_input_tokens, 0),
        }
    }

    /// The TTL this request wrote with: 1 h when any 1 h tokens were written, 5 m when only 5 m
    /// tokens were, unknown when nothing was written or the split is not recorded.
    pub fn written_ttl(&self) -> Option<Ttl> {
        match (self.creation_5m, self.creation_1h) {
            (_, Some(h)) if h > 0 => Some(Ttl::OneHour),
            (Some(m), _) if m > 0 => Some(Ttl::FiveMinutes),
            _ => None,
        }
    }
}

/// The TTL Claude Code asks for, from what the harness knows (its version and the stream's
/// kind), never from the billed cache writes: 2.1.x and later write 1 h entries on the main
/// thread and 5 m entries in subagents; older versions write 5 m everywhere (shared notes on
/// Claude Code transcripts: "In 2.1.x the main thread writes 1 h entries; subagents write 5 m";
/// shared cache notes §8). `None` when the version is not recorded or not readable.
pub fn harness_ttl(version: Option<&str>, kind: StreamKind) -> Option<Ttl> {
    let mut parts = version?.trim().split('.');
    let major: u64 = parts.next()?.parse().ok()?;
    let minor: u64 = parts.next()?.parse().ok()?;
    let one_hour = (major, minor) >= (2, 1);
    Some(match kind {
        StreamKind::Main if one_hour => Ttl::OneHour,
        _ => Ttl::FiveMinutes,
    })
}

/// `--ttl 5m|1h`: the TTL the user knows the harness asked for.
pub fn parse_ttl(s: &str) -> Result<Ttl, ImportError> {
    match s {
        "5m" => Ok(Ttl::FiveMinutes),
        "1h" => Ok(Ttl::OneHour),
        other => Err(ImportError::Ttl(other.to_string())),
    }
}

/// One content block of a response.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Visible text, repeated in later prompts.
    Text(String),
    /// Thinking is billed as output but not repeated in later prompts.
    Thinking(String),
    /// A tool call.
    ToolUse {
        /// The call's id; its result names it.
        id: String,
        /// The tool called.
        name: String,
        /// The call's input, as compact JSON.
        input: String,
    },
}

impl Block {
    /// The text this block puts into later prompts (none for thinking).
    pub fn visible_text(&self) -> &str {
        match self {
            Block::Text(t) => t,
            Block::Thinking(_) => "",
            Block::ToolUse { input, .. } => input,
        }
    }
}

/// One API request: the records of one `requestId`.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    /// The provider's request id (`requestId`).
    pub request_id: String,
    /// 1-based line of its first record.
    pub line: usize,
    /// Time of the first response record (milliseconds since the Unix epoch).
    pub first_at_ms: u64,
    /// The model id as recorded.
    pub model: String,
    /// The cache counters the provider billed.
    pub usage: Usage,
    /// The response's content blocks, in order.
    pub blocks: Vec<Block>,
}

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp.
pub fn parse_time_ms(s: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(s.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(s))
        .ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64)
}

/// Which harness wrote a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Harness {
    /// Claude Code (`~/.claude/projects/*/*.jsonl`).
    #[default]
    ClaudeCode,
    /// OpenAI Codex CLI (`~/.codex/sessions/**/rollout-*.jsonl`).
    Codex,
}

impl Harness {
    /// Whether the harness re-sends the reasoning of the current turn. Codex keeps its
    /// `reasoning` items in the history it sends and the Responses API drops the ones from before
    /// the last user message (see [`codex`]): within a turn the whole previous response is
    /// repeated, and a new turn drops the last turn's reasoning. Claude Code's thinking never
    /// reaches a later prompt as billed input.
    pub fn reasoning_in_turn(self) -> bool {
        self == Harness::Codex
    }

    /// Whether a prompt that shrinks with no record of why is a new conversation (Claude Code:
    /// 14 of 19 such shrinks in the shared notes' corpus read only tools + system) rather than
    /// an edit at the first changed message (Codex: its rollouts read on past a shrink within a
    /// turn, as its history truncation edits old items in place).
    pub fn shrink_restarts(self) -> bool {
        self == Harness::ClaudeCode
    }

    /// The harness of a transcript kind's name (`claude-code`, `codex`), or an error
    /// naming the known kinds.
    pub fn parse(s: &str) -> Result<Self, ImportError> {
        match s {
            "claude-code" => Ok(Harness::ClaudeCode),
            "codex" => Ok(Harness::Codex),
            other => Err(ImportError::Harness(other.to_string())),
        }
    }

    /// Reads a log of this harness, one line at a time: the file is never held whole, only the
    /// line being parsed and what the parser keeps. A line that is not UTF-8 text is skipped
    /// (listed in `skipped` with its line), not the file; a file past the input limit or that
    /// cannot be read is an error naming it.
    pub fn read(self, path: &std::path::Path) -> Result<Transcript, ImportError> {
        let fail = |e: String| {
            crate::util::ScenarioError::new(path, None, e)
                .with_hint("check the path, or raise the limit it names")
        };
        let file =
            std::fs::File::open(path).map_err(|e| fail(format!("cannot read transcript: {e}")))?;
        let mut lines = LineReader::new(std::io::BufReader::new(file));
        let mut t = match self {
            Harness::ClaudeCode => claude_code::parse_lines(&mut lines),
            Harness::Codex => codex::parse_lines(&mut lines),
        };
        if let Some(e) = lines.error {
            return Err(fail(e).into());
        }
        t.lines += lines.not_text.len();
        t.skipped.extend(lines.not_text);
        // In line order, as each parser lists its own.
        t.skipped.sort_by_key(|s| s.line);
        t.source = path.display().to_string();
        t.name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("transcript")
            .to_string();
        Ok(t)
    }
}

/// The lines of a transcript file as `(number, text)`, read one at a time within the input
/// limit ([`crate::budget::max_input_bytes`]). Lines that are not UTF-8 are kept apart in
/// `not_text`; a read error or a file past the limit ends the lines and is kept in `error`.
struct LineReader<R> {
    /// The file, buffered.
    reader: R,
    /// 1-based number of the last line read.
    line: usize,
    /// Bytes read so far.
    bytes: u64,
    /// Most bytes the file may have.
    limit: u64,
    /// Lines skipped because they are not UTF-8 text, with the byte where the text stops.
    not_text: Vec<Skipped>,
    /// Why reading stopped early, if it did.
    error: Option<String>,
}

impl<R: std::io::BufRead> LineReader<R> {
    fn new(reader: R) -> Self {
        LineReader {
            reader,
            line: 0,
            bytes: 0,
            limit: crate::budget::max_input_bytes(),
            not_text: Vec::new(),
            error: None,
        }
    }
}

impl<R: std::io::BufRead> Iterator for LineReader<R> {
    type Item = (usize, String);

    fn next(&mut self) -> Option<(usize, String)> {
        use std::io::{BufRead, Read};
        loop {
            if self.error.is_some() {
                return None;
            }
            let mut buf = Vec::new();
            let room = self.limit.saturating_sub(self.bytes).saturating_add(1);
            let n = match (&mut self.reader).take(room).read_until(b'\n', &mut buf) {
                Ok(0) => return None,
                Ok(n) => n,
                Err(e) => {
                    self.error = Some(format!("cannot read transcript: {e}"));
                    return None;
                }
            };
            self.bytes += n as u64;
            if self.bytes > self.limit {
                self.error = Some(format!(
                    "the transcript is larger than {} bytes (4 per token of the session budget; raise it with `--max-session-tokens N`)",
                    self.limit
                ));
                return None;
            }
            self.line += 1;
            // As `str::lines`: the line ends at `\n` or `\r\n`.
            if buf.last() == Some(&b'\n') {
                buf.pop();
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
            }
            match String::from_utf8(buf) {
                Ok(text) => return Some((self.line, text)),
                Err(e) => self.not_text.push(Skipped {
                    line: self.line,
                    reason: format!(
                        "not UTF-8 text (invalid byte at column {}); the line is skipped",
                        e.utf8_error().valid_up_to() + 1
                    ),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_epoch_millis() {
        // 2025-09-03T00:47:19.293Z: 20334 days after 1970-01-01, plus 47 min 19.293 s.
        let ms = parse_time_ms("2025-09-03T00:47:19.293Z");
        assert_eq!(ms, Some(20_334 * 86_400_000 + 47 * 60_000 + 19_293));
        assert_eq!(parse_time_ms("yesterday"), None);
    }

    #[test]
    fn the_harness_ttl_follows_the_version_and_the_stream_kind() {
        use StreamKind::{Agent, Main};
        assert_eq!(harness_ttl(Some("2.1.3"), Main), Some(Ttl::OneHour));
        assert_eq!(harness_ttl(Some("2.1.3"), Agent), Some(Ttl::FiveMinutes));
        assert_eq!(harness_ttl(Some("2.0.76"), Main), Some(Ttl::FiveMinutes));
        assert_eq!(harness_ttl(Some("1.0.98"), Main), Some(Ttl::FiveMinutes));
        assert_eq!(harness_ttl(Some("3.0.0"), Main), Some(Ttl::OneHour));
        assert_eq!(harness_ttl(Some("dev"), Main), None);
        assert_eq!(harness_ttl(None, Main), None);
    }

    #[test]
    fn written_ttl_follows_the_creation_split() {
        let mut u = Usage {
            creation_5m: Some(10),
            creation_1h: Some(0),
            ..Usage::default()
        };
        assert_eq!(u.written_ttl(), Some(Ttl::FiveMinutes));
        u.creation_1h = Some(3);
        assert_eq!(u.written_ttl(), Some(Ttl::OneHour));
        u.creation_5m = None;
        u.creation_1h = None;
        assert_eq!(u.written_ttl(), None);
    }
}
