//! What happened between two consecutive requests of a stream, judged from the records and the
//! recorded prompt sizes (and, in `billed` mode only, from the billed reads).

use super::event::inferred_what;
use super::{model_family, Events, ImportOptions, Rounds};
use crate::import::{ApiRequest, Item, PrefixChange, Stream};
use crate::prompt::Ttl;

/// What happened between two consecutive requests of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Boundary {
    None,
    /// The conversation restarted from a summary (a `compact_boundary` / `isCompactSummary`).
    Compact,
    /// Tool results cleared in place (`microcompact_boundary`), by tool_use id.
    Cleared(Vec<String>),
    /// The prompt shrank with no record: edited at its first changed message.
    Rewind,
    /// A new user turn of a harness that re-sends only the current turn's reasoning (Codex):
    /// the conversation is kept up to where the last turn began (message tokens).
    TurnStart(u64),
    /// An early context block changed (description, inferred from a billed read).
    EarlyEdit(String, bool),
    /// The tools or the system prompt changed (description, inferred from a billed read).
    ToolsChanged(String, bool),
}

/// The boundary after each request but the last.
pub(super) fn classify(
    s: &Stream,
    rounds: &Rounds<'_>,
    static_tokens: u64,
    opts: &ImportOptions,
) -> Vec<Boundary> {
    // Where each turn began (Codex: the reasoning of a turn is dropped when the next begins).
    let starts = turn_starts(rounds);
    (0..rounds.len().saturating_sub(1))
        .map(|k| {
            let (r, after) = (rounds[k].0, &rounds[k].1);
            let next = rounds[k + 1].0;
            let compacted = after.iter().any(|i| matches!(i, Item::Compaction { .. }));
            let new_turn = after.iter().any(|i| matches!(i, Item::User { .. }));
            if s.harness.reasoning_in_turn() && new_turn && !compacted {
                let start = rounds[starts[k]].0.usage.prompt_tokens();
                return Boundary::TurnStart(start.saturating_sub(static_tokens));
            }
            if compacted {
                return Boundary::Compact;
            }
            recorded(after, r, next).unwrap_or_else(|| {
                // A model switch explains a break by itself (caches are per model).
                let same_model = model_family(&r.model) == model_family(&next.model);
                (opts.events == Events::Billed && same_model)
                    .then(|| classify_break(r, next, static_tokens, opts))
                    .flatten()
                    .unwrap_or(Boundary::None)
            })
        })
        .collect()
}

/// A boundary the records (or the prompt sizes) show, after a request with no compaction.
fn recorded(after: &[&Item], r: &ApiRequest, next: &ApiRequest) -> Option<Boundary> {
    let cleared = after.iter().find_map(|i| match i {
        Item::Cleared { tool_use_ids, .. } => Some(tool_use_ids.clone()),
        _ => None,
    });
    let change = |c: PrefixChange| {
        after.iter().find_map(|i| match i {
            Item::PrefixChange { change, what, .. } if *change == c => Some(what.clone()),
            _ => None,
        })
    };
    if let Some(ids) = cleared {
        Some(Boundary::Cleared(ids))
    } else if next.usage.prompt_tokens() < r.usage.prompt_tokens() {
        Some(Boundary::Rewind)
    } else if let Some(what) = change(PrefixChange::Tools) {
        Some(Boundary::ToolsChanged(
            format!("tools changed ({what})"),
            false,
        ))
    } else {
        change(PrefixChange::EarlyContext)
            .map(|what| Boundary::EarlyEdit(format!("early context block edited ({what})"), false))
    }
}

/// Why the recorded cache broke before `next`, when the break is not an idle gap longer than the
/// TTL (which the cache model replays from the timestamps): where the recorded read stopped
/// tells what changed. A read that still covers the static prefix (tools + system) means a block
/// early in the messages changed (a memory or instructions file injected near the start); a read
/// that stops inside it means the tools or the system prompt changed (e.g. tools added).
fn classify_break(
    prev: &ApiRequest,
    next: &ApiRequest,
    static_tokens: u64,
    opts: &ImportOptions,
) -> Option<Boundary> {
    let read = next.usage.cache_read_input_tokens;
    let p_prev = prev.usage.prompt_tokens();
    if read as f64 >= opts.break_threshold * p_prev as f64 {
        return None;
    }
    let ttl = prev.usage.written_ttl().unwrap_or(Ttl::FiveMinutes);
    if next.first_at_ms.saturating_sub(prev.first_at_ms) > ttl.millis() {
        return None;
    }
    let early = read as f64 >= opts.static_match * static_tokens as f64;
    let what = inferred_what(early, read, static_tokens, ttl.as_str());
    Some(if early {
        Boundary::EarlyEdit(what, true)
    } else {
        Boundary::ToolsChanged(what, true)
    })
}

/// For each request, the index of the first request of its turn: a turn begins at the first
/// request and at every request after a user message.
pub(super) fn turn_starts(rounds: &Rounds<'_>) -> Vec<usize> {
    let mut out = Vec::with_capacity(rounds.len());
    let mut start = 0;
    for k in 0..rounds.len() {
        if k > 0
            && rounds[k - 1]
                .1
                .iter()
                .any(|i| matches!(i, Item::User { .. }))
        {
            start = k;
        }
        out.push(start);
    }
    out
}
