//! Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! One JSON record per line. One API response is written as several `assistant` records (one per
//! content block) sharing `requestId`; they are grouped back into one request. `isSidechain`
//! records belong to subagents: a sidechain record whose parent is not itself a sidechain record
//! (or that names a new `agentId`) starts a new subagent stream. `permissionMode` on user records
//! and `plan_mode` / `plan_mode_exit` attachments carry plan mode (newer versions). Lines that do
//! not parse or do not have the fields a record of their type needs are counted, not fatal.

use std::collections::HashMap;

use serde_json::Value;

use super::{
    parse_time_ms, ApiRequest, Block, Item, PrefixChange, Skipped, Stream, StreamKind, Transcript,
    Usage,
};
use crate::plan_mode::Mode;

/// Parses a whole transcript. Never fails: what it cannot read is listed in `skipped`.
pub fn parse(text: &str) -> Transcript {
    parse_lines(text.lines().enumerate().map(|(i, l)| (i + 1, l)))
}

/// Parses a transcript given as its lines with their 1-based numbers (read one at a time, see
/// [`super::Harness::read`]). Never fails: what it cannot read is listed in `skipped`.
pub fn parse_lines<S: AsRef<str>>(numbered: impl IntoIterator<Item = (usize, S)>) -> Transcript {
    let mut p = Parser::default();
    for (n, line) in numbered {
        p.line(n, line.as_ref());
    }
    let mut streams = p.streams;
    // The main stream first, subagents in order of appearance; drop streams with nothing in them.
    streams.retain(|s| !s.items.is_empty());
    streams.sort_by_key(|s| s.kind != StreamKind::Main);
    Transcript {
        streams,
        lines: p.lines,
        skipped: p.skipped,
        finished_at_ms: p.finished,
        ..Transcript::default()
    }
}

#[derive(Default)]
struct Parser {
    streams: Vec<Stream>,
    /// Record uuid -> stream index.
    by_uuid: HashMap<String, usize>,
    /// agentId -> stream index.
    by_agent: HashMap<String, usize>,
    /// requestId -> (stream index, item index) of its request.
    by_request: HashMap<String, (usize, usize)>,
    /// Permission mode last seen per stream.
    modes: HashMap<usize, Mode>,
    /// requestId -> time of its last record.
    finished: HashMap<String, u64>,
    /// Time of the last timestamped record (for records that carry none).
    last_at: Option<u64>,
    /// Streams whose records are being written again (a resumed session re-writes the records
    /// of earlier requests with new uuids): their repeated user records are not counted twice.
    /// Cleared when the stream's next new request starts.
    rewriting: std::collections::HashSet<usize>,
    /// Streams where a Zed/ACP tool wrote a skill file, with the number of requests started
    /// since the request that made the call (see [`is_acp_skill_write`]).
    skill_writes: HashMap<usize, u8>,
    lines: usize,
    skipped: Vec<Skipped>,
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn u64_field(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// A `stop_hook_summary` that lists an in-process hook (`"command": "callback"`): a Stop hook of
/// Claude Code's own rather than a user's shell command. In the sessions that record one, the
/// next turn reads through the final reply, which only a request re-sending the conversation up
/// to that reply can have written.
fn runs_own_stop_hook(record: &Value) -> bool {
    record
        .get("hookInfos")
        .and_then(Value::as_array)
        .is_some_and(|hooks| {
            hooks
                .iter()
                .any(|h| str_field(h, "command") == Some("callback"))
        })
}

/// Text of a `content` value: a string, or the text of its text blocks.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn parse_mode(s: &str) -> Option<Mode> {
    match s {
        "default" => Some(Mode::Default),
        "acceptEdits" => Some(Mode::AcceptEdits),
        "plan" => Some(Mode::Plan),
        "auto" => Some(Mode::Auto),
        "bypassPermissions" => Some(Mode::BypassPermissions),
        _ => None,
    }
}

impl Parser {
    fn skip(&mut self, line: usize, reason: impl Into<String>) {
        self.skipped.push(Skipped {
            line,
            reason: reason.into(),
        });
    }

    fn line(&mut self, n: usize, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        self.lines += 1;
        let record: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return self.skip(n, format!("not a JSON record ({e})")),
        };
        let Some(kind) = str_field(&record, "type") else {
            return self.skip(n, "record without a `type`");
        };
        match kind {
            "user" | "assistant" | "attachment" | "system" => {}
            "permission-mode" => return self.permission_mode(n, &record),
            // Session titles, streaming progress and harness bookkeeping never reach the API.
            "summary"
            | "file-history-snapshot"
            | "queue-operation"
            | "progress"
            | "last-prompt"
            | "ai-title"
            | "custom-title"
            | "agent-name"
            | "pr-link" => return,
            other => return self.skip(n, format!("record type `{other}` is not interpreted")),
        }
        let Some(at_ms) = str_field(&record, "timestamp").and_then(parse_time_ms) else {
            return self.skip(n, format!("`{kind}` record without a valid `timestamp`"));
        };
        self.last_at = Some(self.last_at.map_or(at_ms, |t| t.max(at_ms)));
        let stream = self.stream_of(&record);
        if let Some(uuid) = str_field(&record, "uuid") {
            self.by_uuid.insert(uuid.to_string(), stream);
        }
        if self.streams[stream].version.is_none() {
            self.streams[stream].version = str_field(&record, "version").map(str::to_string);
        }
        match kind {
            "user" => self.user(n, &record, stream, at_ms),
            "assistant" => self.assistant(n, &record, stream, at_ms),
            "system" => self.system(n, &record, stream, at_ms),
            _ => self.attachment(n, &record, stream, at_ms),
        }
    }

    /// `{"type":"permission-mode","permissionMode":"plan"}`: the user switched modes. The record
    /// may carry no timestamp or uuid: it belongs to the main stream, at the last time seen.
    fn permission_mode(&mut self, n: usize, record: &Value) {
        let Some(mode) = str_field(record, "permissionMode") else {
            return self.skip(n, "permission-mode record without `permissionMode`");
        };
        let Some(m) = parse_mode(mode) else {
            return self.skip(n, format!("unknown permissionMode `{mode}` (ignored)"));
        };
        let at_ms = str_field(record, "timestamp")
            .and_then(parse_time_ms)
            .or(self.last_at)
            .unwrap_or(0);
        let stream = self.stream_of(record);
        self.set_mode(stream, m, at_ms);
    }

    fn set_mode(&mut self, stream: usize, m: Mode, at_ms: u64) {
        match self.modes.insert(stream, m) {
            // The first mode seen is where the stream starts, not a switch.
            None if !self.has_request(stream) => self.streams[stream].initial_mode = m,
            None => self.push(stream, Item::Mode { mode: m, at_ms }),
            Some(before) if before != m => self.push(stream, Item::Mode { mode: m, at_ms }),
            Some(_) => {}
        }
    }

    fn has_request(&self, stream: usize) -> bool {
        self.streams[stream]
            .items
            .iter()
            .any(|i| matches!(i, Item::Request(_)))
    }

    /// `system` records: compaction boundaries, in-place clearing, and requests the harness made
    /// without an assistant record; bookkeeping subtypes are ignored.
    fn system(&mut self, n: usize, record: &Value, stream: usize, at_ms: u64) {
        match str_field(record, "subtype").unwrap_or("") {
            "compact_boundary" => self.push(
                stream,
                Item::Compaction {
                    summary: String::new(),
                    at_ms,
                },
            ),
            "microcompact_boundary" => {
                let ids: Vec<String> = record
                    .get("microcompactMetadata")
                    .and_then(|m| m.get("compactedToolIds"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                self.push(
                    stream,
                    Item::Cleared {
                        tool_use_ids: ids,
                        at_ms,
                    },
                );
            }
            "away_summary" => self.push(
                stream,
                Item::Unlogged {
                    why: "a summary made while the user was away (away_summary)".into(),
                    instruction: true,
                    at_ms,
                },
            ),
            "api_error" => {
                let attempt = u64_field(record, "retryAttempt").unwrap_or(0);
                self.push(
                    stream,
                    Item::Unlogged {
                        why: format!("a request that failed (api_error, retry attempt {attempt})"),
                        instruction: true,
                        at_ms,
                    },
                )
            }
            "stop_hook_summary" if runs_own_stop_hook(record) => self.push(
                stream,
                Item::Unlogged {
                    why: "Claude Code's own Stop hook (`callback`) re-sent the conversation \
                          through the final reply"
                        .into(),
                    instruction: false,
                    at_ms,
                },
            ),
            "local_command" | "turn_duration" | "stop_hook_summary" | "informational" => {}
            other => self.skip(n, format!("system record `{other}` is not interpreted")),
        }
    }

    /// The stream a record belongs to, creating subagent streams as they start.
    fn stream_of(&mut self, record: &Value) -> usize {
        let sidechain = record
            .get("isSidechain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !sidechain {
            if let Some(i) = self.streams.iter().position(|s| s.kind == StreamKind::Main) {
                return i;
            }
            return self.new_stream("main".into(), StreamKind::Main);
        }
        if let Some(agent) = str_field(record, "agentId") {
            if let Some(&i) = self.by_agent.get(agent) {
                return i;
            }
            let i = self.new_agent();
            self.by_agent.insert(agent.to_string(), i);
            return i;
        }
        let parent = str_field(record, "parentUuid").and_then(|p| self.by_uuid.get(p).copied());
        match parent {
            Some(i) if self.streams[i].kind == StreamKind::Agent => i,
            _ => self.new_agent(),
        }
    }

    fn new_agent(&mut self) -> usize {
        let k = self
            .streams
            .iter()
            .filter(|s| s.kind == StreamKind::Agent)
            .count();
        self.new_stream(format!("agent-{}", k + 1), StreamKind::Agent)
    }

    fn new_stream(&mut self, name: String, kind: StreamKind) -> usize {
        self.streams.push(Stream {
            name,
            kind,
            initial_mode: Mode::Default,
            version: None,
            items: Vec::new(),
            harness: super::Harness::ClaudeCode,
        });
        self.streams.len() - 1
    }

    fn push(&mut self, stream: usize, item: Item) {
        self.streams[stream].items.push(item);
    }

    fn user(&mut self, n: usize, record: &Value, stream: usize, at_ms: u64) {
        if let Some(mode) = str_field(record, "permissionMode") {
            match parse_mode(mode) {
                Some(m) => self.set_mode(stream, m, at_ms),
                None => self.skip(n, format!("unknown permissionMode `{mode}` (ignored)")),
            }
        }
        let Some(message) = record.get("message") else {
            return self.skip(n, "user record without `message`");
        };
        let content = message.get("content").unwrap_or(&Value::Null);
        let compact = record
            .get("isCompactSummary")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if compact {
            return self.compact_summary(stream, content_text(content), at_ms);
        }
        if self.interrupted_unlogged(stream, content) {
            let at = self.streams[stream].items.last().map_or(at_ms, Item::at_ms);
            self.push(
                stream,
                Item::Unlogged {
                    why: "a request interrupted before its first block".into(),
                    instruction: false,
                    at_ms: at,
                },
            );
        }
        match content {
            Value::String(s) => self.push_user(
                n,
                stream,
                Item::User {
                    text: s.clone(),
                    at_ms,
                },
            ),
            Value::Array(blocks) => {
                for b in blocks {
                    self.user_block(n, b, stream, at_ms);
                }
            }
            _ => self.skip(
                n,
                "user record whose `message.content` is neither text nor blocks",
            ),
        }
    }

    /// A compaction's summary: it completes the `compact_boundary` it follows, else it is a
    /// compaction of its own.
    fn compact_summary(&mut self, stream: usize, summary: String, at_ms: u64) {
        if let Some(Item::Compaction { summary: s, .. }) = self.streams[stream].items.last_mut() {
            if s.is_empty() {
                *s = summary;
                return;
            }
        }
        self.push(stream, Item::Compaction { summary, at_ms });
    }

    /// One content block of a user record (line `n`).
    fn user_block(&mut self, n: usize, b: &Value, stream: usize, at_ms: u64) {
        match str_field(b, "type") {
            Some("tool_result") => {
                let Some(id) = str_field(b, "tool_use_id") else {
                    return self.skip(n, "tool_result without `tool_use_id`");
                };
                let item = Item::ToolResult {
                    tool_use_id: id.to_string(),
                    text: content_text(b.get("content").unwrap_or(&Value::Null)),
                    is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                    at_ms,
                };
                self.push_user(n, stream, item);
            }
            Some("text") => {
                let text = str_field(b, "text").unwrap_or("").to_string();
                self.push_user(n, stream, Item::User { text, at_ms });
            }
            Some("image") | Some("document") => {
                // Their token size is not in the record; the usage delta carries it.
                self.push(
                    stream,
                    Item::User {
                        text: String::new(),
                        at_ms,
                    },
                );
            }
            other => self.skip(
                n,
                format!("user content block of type {other:?} is not interpreted"),
            ),
        }
    }

    /// An interrupt marker (`[Request interrupted by user]`) right after the user's own input or
    /// a tool's result: the request carrying it was sent, but no block of it was logged. (The
    /// user stopping a running tool is marked `... for tool use`: nothing was sent.)
    fn interrupted_unlogged(&self, stream: usize, content: &Value) -> bool {
        content_text(content).trim() == "[Request interrupted by user]"
            && matches!(
                self.streams[stream].items.last(),
                Some(Item::User { .. } | Item::Reminder { .. } | Item::ToolResult { .. })
            )
    }

    fn attachment(&mut self, n: usize, record: &Value, stream: usize, at_ms: u64) {
        let Some(att) = record.get("attachment") else {
            return self.skip(n, "attachment record without `attachment`");
        };
        let kind = str_field(att, "type").unwrap_or("").to_string();
        match kind.as_str() {
            "plan_mode" | "plan_mode_exit" | "plan_mode_reentry" => {
                // The reminder's own wording is not stored; its fields are what the harness
                // renders into it, and the usage delta fixes its size.
                let text = att.to_string();
                self.push(stream, Item::Reminder { kind, text, at_ms });
            }
            "edited_text_file" => {
                let file = str_field(att, "filename").unwrap_or("");
                let text = att.to_string();
                if is_memory_file(file, str_field(record, "cwd")) {
                    // The reminder is appended, and the early context block holding the file
                    // changes on the next turn.
                    self.push(
                        stream,
                        Item::PrefixChange {
                            change: PrefixChange::EarlyContext,
                            what: format!("{file} edited (edited_text_file)"),
                            at_ms,
                        },
                    );
                }
                self.push(stream, Item::Reminder { kind, text, at_ms });
            }
            // Appended to the next user message as `<system-reminder>` text: the tail grows, the
            // prefix stays (deltas announce tools, instructions and dates without rewriting them).
            "deferred_tools_delta"
            | "mcp_instructions_delta"
            | "date_change"
            | "skill_listing"
            | "task_reminder"
            | "todo_reminder"
            | "file"
            | "compact_file_reference"
            | "queued_command"
            | "command_permissions"
            | "companion_intro"
            | "nested_memory"
            | "critical_system_reminder" => {
                let text = att.to_string();
                self.push(stream, Item::Reminder { kind, text, at_ms });
            }
            other => self.skip(n, format!("attachment `{other}` is not interpreted")),
        }
    }

    fn assistant(&mut self, n: usize, record: &Value, stream: usize, at_ms: u64) {
        let Some(message) = record.get("message") else {
            return self.skip(n, "assistant record without `message`");
        };
        let model = str_field(message, "model").unwrap_or("").to_string();
        if model == "<synthetic>" {
            return self.skip(
                n,
                "synthetic assistant message (written by the harness, no API request)",
            );
        }
        let Some(request_id) = str_field(record, "requestId")
            .or_else(|| str_field(message, "id"))
            .map(str::to_string)
        else {
            return self.skip(n, "assistant record without `requestId` or `message.id`");
        };
        let blocks = match message.get("content") {
            Some(Value::Array(bs)) => bs.iter().filter_map(block).collect(),
            Some(Value::String(s)) => vec![Block::Text(s.clone())],
            _ => Vec::new(),
        };
        if let Some(&(s, i)) = self.by_request.get(&request_id) {
            if self.last_request(s) != Some(i) {
                // A record of an earlier request after a later one started: written again on
                // resume. Its request was billed once, and finished long before.
                self.rewriting.insert(s);
                return self.skip(
                    n,
                    format!("record of earlier request {request_id} written again (a resumed session): counted once"),
                );
            }
        }
        let finished = self.finished.entry(request_id.clone()).or_insert(at_ms);
        *finished = (*finished).max(at_ms);
        if let Some(&(s, i)) = self.by_request.get(&request_id) {
            if blocks.iter().any(is_acp_skill_write) {
                self.skill_writes.insert(s, 0);
            }
            // The last record of a request carries the billed usage.
            let usage = message.get("usage").and_then(parse_usage);
            if let Item::Request(r) = &mut self.streams[s].items[i] {
                r.blocks.extend(blocks);
                if let Some(u) = usage {
                    r.usage = u;
                }
            }
            return;
        }
        let Some(usage) = message.get("usage").and_then(parse_usage) else {
            return self.skip(
                n,
                format!("request {request_id} without a readable `usage`"),
            );
        };
        self.skills_reloaded(stream, at_ms);
        let wrote_skill = blocks.iter().any(is_acp_skill_write);
        let item = Item::Request(ApiRequest {
            request_id: request_id.clone(),
            line: n,
            first_at_ms: at_ms,
            model,
            usage,
            blocks,
        });
        self.push(stream, item);
        if wrote_skill {
            self.skill_writes.insert(stream, 0);
        }
        let idx = self.streams[stream].items.len() - 1;
        self.by_request.insert(request_id, (stream, idx));
        self.rewriting.remove(&stream);
    }

    /// A new request of `stream` starts: the second one after a Zed/ACP skill-file write is sent
    /// with the re-read skills, which change the prompt after the leading block.
    fn skills_reloaded(&mut self, stream: usize, at_ms: u64) {
        let Some(since) = self.skill_writes.get_mut(&stream) else {
            return;
        };
        *since += 1;
        if *since < 2 {
            return;
        }
        self.skill_writes.remove(&stream);
        self.push(
            stream,
            Item::PrefixChange {
                change: PrefixChange::EarlyContext,
                what: "a skill file written through Zed's ACP tools, re-read two requests later"
                    .into(),
                at_ms,
            },
        );
    }

    /// Index of the stream's latest request item.
    fn last_request(&self, stream: usize) -> Option<usize> {
        self.streams[stream]
            .items
            .iter()
            .rposition(|i| matches!(i, Item::Request(_)))
    }

    /// While a resumed stream re-writes its records, a user item that repeats one it already
    /// holds (a tool result of a seen call, the same text) is the copy, not new input.
    fn repeated(&self, stream: usize, item: &Item) -> bool {
        if !self.rewriting.contains(&stream) {
            return false;
        }
        self.streams[stream].items.iter().any(|i| match (i, item) {
            (Item::ToolResult { tool_use_id: a, .. }, Item::ToolResult { tool_use_id: b, .. }) => {
                a == b
            }
            (Item::User { text: a, .. }, Item::User { text: b, .. }) => a == b,
            _ => false,
        })
    }

    /// Adds a user item unless it is a resumed stream's copy of one it holds.
    fn push_user(&mut self, n: usize, stream: usize, item: Item) {
        if self.repeated(stream, &item) {
            return self.skip(
                n,
                "user record written again (a resumed session): counted once",
            );
        }
        self.push(stream, item);
    }
}

/// Memory and instruction files Claude Code loads into the early context block at launch:
/// `MEMORY.md` (auto memory), any `.claude/CLAUDE.md` (user and project), and `CLAUDE.md` /
/// `CLAUDE.local.md` in the working folder or one of its ancestors. A `CLAUDE.md` in a
/// subfolder of the working folder is loaded lazily, as an attachment at the tail, when files
/// under it are read ("Claude Code reads memories recursively: starting in the cwd, [it]
/// recurses up to (but not including) the root directory / and reads any CLAUDE.md or
/// CLAUDE.local.md files it finds. [...] CLAUDE.md nested in subtrees under your current working
/// directory [...] are only included when Claude reads files in those subtrees", Claude Code's
/// memory docs as quoted in agentsmd/agents.md#39, read 2026-12-01): editing one changes no
/// prefix. Without a recorded `cwd`, every such file counts as early context.
fn is_memory_file(path: &str, cwd: Option<&str>) -> bool {
    use std::path::{Component, Path, PathBuf};
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match name.to_ascii_uppercase().as_str() {
        "MEMORY.MD" => return true,
        "CLAUDE.MD" | "CLAUDE.LOCAL.MD" => {}
        _ => return false,
    }
    let p = Path::new(path);
    let dir = p.parent().unwrap_or(Path::new(""));
    if dir.file_name().is_some_and(|d| d == ".claude") {
        return true;
    }
    let Some(cwd) = cwd else {
        return true;
    };
    // Lexically normalised (`.` and `..` resolved), relative paths taken from the working folder.
    let normal = |p: &Path| -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        out
    };
    let cwd = normal(Path::new(cwd));
    let dir = normal(&cwd.join(dir));
    cwd.starts_with(&dir)
}

/// A Write or Edit of a skill file (`.claude/skills/<name>/SKILL.md`) through the tools Zed's
/// ACP adapter gives Claude Code (`mcp__acp__Write`, `mcp__acp__Edit`, ...; the adapter
/// disallows the built-in file tools). Measured on a large corpus (the shared notes): in Zed/ACP
/// sessions (2.1.22) such a write was followed two requests later by a break to the leading
/// block 7 times of 7; after the CLI's own Write (2.1.27), 0 times of about 15.
fn is_acp_skill_write(b: &Block) -> bool {
    let Block::ToolUse { name, input, .. } = b else {
        return false;
    };
    let tool = name.to_ascii_lowercase();
    let Some(op) = tool.strip_prefix("mcp__acp__") else {
        return false;
    };
    if !matches!(op, "write" | "edit" | "multiedit") {
        return false;
    }
    let Ok(args) = serde_json::from_str::<Value>(input) else {
        return false;
    };
    ["file_path", "abs_path", "path"]
        .iter()
        .filter_map(|k| str_field(&args, k))
        .any(is_skill_file)
}

/// `.../.claude/skills/<name>/SKILL.md`, with either separator.
fn is_skill_file(path: &str) -> bool {
    let parts: Vec<&str> = path.split(['/', '\\']).collect();
    matches!(
        parts.as_slice(),
        [.., ".claude", "skills", _, file] if file.eq_ignore_ascii_case("SKILL.md")
    )
}

fn block(b: &Value) -> Option<Block> {
    match str_field(b, "type")? {
        "text" => Some(Block::Text(str_field(b, "text").unwrap_or("").to_string())),
        "thinking" => Some(Block::Thinking(
            str_field(b, "thinking").unwrap_or("").to_string(),
        )),
        "tool_use" => Some(Block::ToolUse {
            id: str_field(b, "id").unwrap_or("").to_string(),
            name: str_field(b, "name").unwrap_or("").to_string(),
            input: b.get("input").map(Value::to_string).unwrap_or_default(),
        }),
        _ => None,
    }
}

fn parse_usage(u: &Value) -> Option<Usage> {
    let split = u.get("cache_creation");
    Some(Usage {
        input_tokens: u64_field(u, "input_tokens")?,
        cache_creation_input_tokens: u64_field(u, "cache_creation_input_tokens").unwrap_or(0),
        cache_read_input_tokens: u64_field(u, "cache_read_input_tokens").unwrap_or(0),
        creation_5m: split.and_then(|s| u64_field(s, "ephemeral_5m_input_tokens")),
        creation_1h: split.and_then(|s| u64_field(s, "ephemeral_1h_input_tokens")),
        output_tokens: u64_field(u, "output_tokens").unwrap_or(0),
        reasoning_tokens: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::is_memory_file;

    #[test]
    fn memory_files_are_those_loaded_at_launch() {
        let cwd = Some("/home/u/repo/pkg");
        // The working folder and its ancestors, `.claude/` folders, auto memory: early context.
        assert!(is_memory_file("/home/u/repo/pkg/CLAUDE.md", cwd));
        assert!(is_memory_file("/home/u/repo/CLAUDE.local.md", cwd));
        assert!(is_memory_file("CLAUDE.md", cwd));
        assert!(is_memory_file("../CLAUDE.md", cwd));
        assert!(is_memory_file("/home/u/.claude/CLAUDE.md", cwd));
        assert!(is_memory_file(
            "/home/u/.claude/projects/p/memory/MEMORY.md",
            cwd
        ));
        // A subfolder's or a sibling's CLAUDE.md is loaded lazily at the tail; other files are not
        // memory files at all.
        assert!(!is_memory_file("/home/u/repo/pkg/src/CLAUDE.md", cwd));
        assert!(!is_memory_file("src/CLAUDE.md", cwd));
        assert!(!is_memory_file("/home/u/repo/web/CLAUDE.md", cwd));
        assert!(!is_memory_file("/home/u/repo/pkg/README.md", cwd));
        // No recorded working folder: any CLAUDE.md counts.
        assert!(is_memory_file("/x/src/CLAUDE.md", None));
    }
}
