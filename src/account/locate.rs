//! Pointing a session that could not be replayed at the file and line it comes from, so a
//! folder run can say `path/s.jsonl:12: reason` and go on with the other sessions.

use super::load::LoadedSession;
use crate::import::ApiRequest;

/// The request a replay error points at: the first whose recorded model the message names
/// (an unknown model), else, for a size the replay refuses, the largest recorded prompt (the
/// record with the corrupt count); `None` when the message points at no request.
fn culprit<'a>(l: &'a LoadedSession, message: &str) -> Option<(&'a str, &'a ApiRequest)> {
    let requests = || {
        l.transcript
            .streams
            .iter()
            .flat_map(|s| s.requests().map(move |r| (s.name.as_str(), r)))
    };
    let named = requests().find(|(_, r)| {
        !r.model.is_empty()
            && (message.contains(&format!("`{}`", r.model))
                || message.contains(&format!("'{}'", r.model))
                || message.contains(&format!("model {}", r.model)))
    });
    if named.is_some() {
        return named;
    }
    if message.contains("tokens") && message.contains("limit") {
        return requests().max_by_key(|(_, r)| r.usage.prompt_tokens());
    }
    None
}

/// The file a stream was read from: a subagent file named after the stream (`agent-x`,
/// `agent-x-2`), else the main file.
fn file_of(l: &LoadedSession, stream: &str) -> String {
    let sub = l.files.subagents.iter().find(|p| {
        p.file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|stem| stream == stem || stream.starts_with(&format!("{stem}-")))
    });
    sub.or(l.files.main.as_ref())
        .or(l.files.subagents.first())
        .map_or_else(|| l.files.session_id.clone(), |p| p.display().to_string())
}

/// `message`, prefixed with `file:line:` of the request it points at (or `file:` alone).
pub fn locate(l: &LoadedSession, message: &str) -> String {
    match culprit(l, message) {
        Some((stream, r)) => format!("{}:{}: {message}", file_of(l, stream), r.line),
        None => format!("{}: {message}", file_of(l, "main")),
    }
}
