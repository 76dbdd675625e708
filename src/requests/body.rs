//! A request body as an ordered list of pieces: each tool definition, system block and message
//! content block, with its JSON path, its content (without `cache_control`) and its mark.
//!
//! Shapes read:
//! - Anthropic Messages (and Bedrock's `invoke`, the same body with `anthropic_version` and the
//!   model in the URL): `tools[]`, `system` (a string or text blocks), `messages[].content` (a
//!   string or blocks); `cache_control: {type: ephemeral, ttl?: 5m|1h}` on a tool, a system block
//!   or a content block, and at the top level for automatic caching, which places the mark on the
//!   last block (platform.claude.com/docs/en/build-with-claude/prompt-caching, "Automatic
//!   caching"; the TTL defaults to 5m).
//! - OpenAI Chat Completions (OpenRouter's variant keeps Anthropic's `cache_control` on content
//!   parts): `tools[]`, `messages[]` where `role: system|developer` messages are the system level.
//! - OpenAI Responses: `tools[]`, `instructions` (system), `input` (a string or items).

use serde_json::Value;

use crate::prompt::{Level, Role, Ttl};

/// One tool definition, system block or message content block.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// JSON path in the body: `tools[3]`, `system[0]`, `messages[2].content[1]`.
    pub path: String,
    /// Which part of the prompt it belongs to (tools, system or messages).
    pub level: Level,
    /// For message blocks, whose block it is.
    pub role: Option<Role>,
    /// The block's JSON without `cache_control` (what the prefix hash sees).
    pub value: Value,
    /// Text to tokenize: the block's text fields, or its compact JSON.
    pub text: String,
    /// The `cache_control` mark on the block, if any.
    pub mark: Option<Ttl>,
    /// The tool's name, for tool pieces.
    pub name: Option<String>,
}

/// A parsed request body.
#[derive(Debug, Clone, Default)]
pub struct Body {
    /// The model as sent (or from the URL for Bedrock).
    pub model: String,
    /// Tools, then system, then messages, in prompt order.
    pub pieces: Vec<Piece>,
    /// Top-level `cache_control` (automatic caching), already applied to the last piece.
    pub automatic: Option<Ttl>,
    /// The API shape: `anthropic`, `openai-chat` or `openai-responses`.
    pub shape: &'static str,
}

/// The TTL of a `cache_control` object (`ttl` absent: 5m).
pub fn mark_of(v: &Value) -> Option<Ttl> {
    let cc = v.get("cache_control").filter(|c| !c.is_null())?;
    Some(match cc.get("ttl").and_then(Value::as_str) {
        Some("1h") => Ttl::OneHour,
        _ => Ttl::FiveMinutes,
    })
}

fn without_mark(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut m = m.clone();
            m.remove("cache_control");
            Value::Object(m)
        }
        other => other.clone(),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => match m.get("text").and_then(Value::as_str) {
            Some(t) if m.len() <= 3 => t.to_string(),
            _ => serde_json::to_string(&without_mark(v)).unwrap_or_default(),
        },
        other => other.to_string(),
    }
}

fn piece(path: String, level: Level, role: Option<Role>, v: &Value) -> Piece {
    Piece {
        path,
        level,
        role,
        value: without_mark(v),
        text: text_of(v),
        mark: mark_of(v),
        name: v
            .get("name")
            .or_else(|| v.pointer("/function/name"))
            .and_then(Value::as_str)
            .map(String::from),
    }
}

/// Blocks of a `content` (or `system`) field: a string is one text block.
fn blocks(out: &mut Vec<Piece>, base: &str, level: Level, role: Option<Role>, v: &Value) {
    match v {
        Value::Array(items) => {
            for (k, b) in items.iter().enumerate() {
                out.push(piece(format!("{base}[{k}]"), level, role, b));
            }
        }
        Value::Null => {}
        // A string is the same prompt as one text block (Anthropic: `system` and `content`
        // strings are shorthand for `[{type: text, text}]`), so both compare equal.
        Value::String(s) => out.push(piece(
            base.to_string(),
            level,
            role,
            &serde_json::json!({"type": "text", "text": s}),
        )),
        other => out.push(piece(base.to_string(), level, role, other)),
    }
}

fn role_of(m: &Value) -> Option<Role> {
    match m.get("role").and_then(Value::as_str) {
        Some("assistant") => Some(Role::Assistant),
        _ => Some(Role::User),
    }
}

/// OpenAI Responses: `instructions` (system), then `input` (a string or items).
fn responses_pieces(v: &Value, pieces: &mut Vec<Piece>) {
    if let Some(ins) = v.get("instructions") {
        blocks(pieces, "instructions", Level::System, None, ins);
    }
    match v.get("input") {
        Some(Value::Array(items)) => {
            for (i, it) in items.iter().enumerate() {
                let base = format!("input[{i}]");
                match it.get("content") {
                    Some(c) => blocks(
                        pieces,
                        &format!("{base}.content"),
                        Level::Messages,
                        role_of(it),
                        c,
                    ),
                    None => pieces.push(piece(base, Level::Messages, role_of(it), it)),
                }
            }
        }
        Some(other) => blocks(pieces, "input", Level::Messages, Some(Role::User), other),
        None => {}
    }
}

fn is_system_role(m: &Value) -> bool {
    matches!(
        m.get("role").and_then(Value::as_str),
        Some("system" | "developer")
    )
}

/// Anthropic Messages or OpenAI Chat Completions: `system`, then `messages`. In Chat
/// Completions, the leading `system` / `developer` messages are the system level (a later one
/// is a mid-conversation message).
fn messages_pieces(
    v: &Value,
    url: &str,
    pieces: &mut Vec<Piece>,
) -> Result<&'static str, BodyError> {
    let msgs = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(BodyError::NoMessages)?;
    let chat = v.get("system").is_none()
        && v.get("anthropic_version").is_none()
        && (url.contains("chat/completions") || msgs.iter().any(is_system_role));
    if let Some(sys) = v.get("system") {
        blocks(pieces, "system", Level::System, None, sys);
    }
    let mut leading = true;
    for (i, m) in msgs.iter().enumerate() {
        leading &= chat && is_system_role(m);
        let (level, role) = if leading {
            (Level::System, None)
        } else {
            (Level::Messages, role_of(m))
        };
        if let Some(c) = m.get("content").filter(|c| !c.is_null()) {
            blocks(pieces, &format!("messages[{i}].content"), level, role, c);
        }
        for (k, c) in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            pieces.push(piece(
                format!("messages[{i}].tool_calls[{k}]"),
                level,
                role,
                c,
            ));
        }
    }
    Ok(if chat { "openai-chat" } else { "anthropic" })
}

/// A request body of no shape plancache reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Not a JSON object.
    #[error("the request body is not a JSON object")]
    NotObject,
    /// No model in the body or the URL.
    #[error("the body names no model (and the URL is not a Bedrock /model/ URL)")]
    NoModel,
    /// A Messages or Chat Completions body without its `messages`.
    #[error("the body has no `messages` list")]
    NoMessages,
}

/// The model of a Bedrock `invoke` URL: `/model/<id>/invoke[-with-response-stream]`.
fn bedrock_model(url: &str) -> Option<String> {
    let rest = url.split("/model/").nth(1)?;
    let id = rest.split('/').next()?;
    Some(id.replace("%3A", ":"))
}

impl Body {
    /// Parses a body; `url` supplies the model when the body has none (Bedrock).
    pub fn parse(v: &Value, url: &str) -> Result<Body, BodyError> {
        if !v.is_object() {
            return Err(BodyError::NotObject);
        }
        let model = v
            .get("model")
            .and_then(Value::as_str)
            .map(String::from)
            .or_else(|| bedrock_model(url))
            .ok_or(BodyError::NoModel)?;
        let mut pieces = Vec::new();
        for (i, t) in v
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            pieces.push(piece(format!("tools[{i}]"), Level::Tools, None, t));
        }
        let shape = if v.get("input").is_some() && v.get("messages").is_none() {
            responses_pieces(v, &mut pieces);
            "openai-responses"
        } else {
            messages_pieces(v, url, &mut pieces)?
        };
        let automatic = mark_of(v);
        if let (Some(ttl), Some(last)) = (automatic, pieces.last_mut()) {
            last.mark = Some(last.mark.map_or(ttl, |m| m.max(ttl)));
        }
        Ok(Body {
            model,
            pieces,
            automatic,
            shape,
        })
    }

    /// Index of the last marked piece, if any.
    pub fn last_mark(&self) -> Option<usize> {
        self.pieces.iter().rposition(|p| p.mark.is_some())
    }
}

/// The model name as the price table knows it: the provider prefix dropped (`anthropic/`,
/// Bedrock's `eu.anthropic.` and `-v1:0`), dots in versions as dashes (`4.6` -> `4-6`).
pub fn normalize_model(model: &str) -> String {
    let mut m = model.rsplit('/').next().unwrap_or(model).to_string();
    for region in ["us.", "eu.", "apac.", "global.", "jp.", "au."] {
        if let Some(rest) = m.strip_prefix(region) {
            m = rest.to_string();
        }
    }
    if let Some(rest) = m.strip_prefix("anthropic.") {
        m = rest.to_string();
    }
    if let Some(i) = m.find("-v1:") {
        m.truncate(i);
    }
    if m.starts_with("claude") {
        m = m.replace('.', "-");
    }
    m
}
