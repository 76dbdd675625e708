//! What the importer recognised between two requests of a stream, typed: validate asks each
//! event whether it explains a break, and the report prints it.

use std::fmt;

use super::{comment_safe, INFERRED};

/// One event recognised before a request (between it and the previous request of its stream),
/// as the scenario replays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportEvent {
    /// The request ran on another model family than the previous one (caches are per model).
    ModelChanged {
        /// The previous request's model id, as recorded.
        from: String,
        /// This request's model id, as recorded.
        to: String,
    },
    /// A full compaction: the conversation restarted from a summary.
    Compaction {
        /// The prompt before the compaction (tokens, as billed).
        from: u64,
        /// The prompt after it (tokens, as billed).
        to: u64,
    },
    /// Tool results cleared in place (`microcompact_boundary`).
    Cleared {
        /// Message tokens before the first cleared result, kept in the cache.
        kept: u64,
    },
    /// The prompt shrank with no record saying why.
    Shrank {
        /// The previous prompt (tokens, as billed).
        from: u64,
        /// This prompt (tokens, as billed).
        to: u64,
        /// Replayed as a new conversation after the static prefix (Claude Code), else as an
        /// edit at the first changed message (Codex).
        restart: bool,
    },
    /// An early context block or the tools changed.
    PrefixEdit {
        /// What changed, as the records (or the billed read, when `inferred`) tell it.
        what: String,
        /// Placed from a billed cache read (`billed` mode only), not from the transcript.
        inferred: bool,
        /// How the scenario replays it.
        replay: PrefixReplay,
    },
    /// A request the harness sent but did not log (its place is known, its reply is not).
    Unlogged {
        /// Which record revealed it.
        why: String,
    },
}

/// How a [`ImportEvent::PrefixEdit`] is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixReplay {
    /// An `edit_context` step on the scenario's early context block.
    EditContext,
    /// Not replayed: the stream has no first user message to hold the block.
    NoContextBlock,
    /// An `add_tool` step.
    AddTool,
}

impl ImportEvent {
    /// Whether the event, read from the transcript, explains a break of the prefix cache before
    /// its request. Events placed from a billed read are not the transcript's, and an unlogged
    /// request refreshes the cache rather than breaking it.
    pub fn explains_break(&self) -> bool {
        match self {
            ImportEvent::PrefixEdit { inferred, .. } => !inferred,
            ImportEvent::Unlogged { .. } => false,
            _ => true,
        }
    }
}

impl fmt::Display for ImportEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportEvent::ModelChanged { from, to } => write!(
                f,
                "model changed from {} to {} (each model has its own cache)",
                comment_safe(from),
                comment_safe(to)
            ),
            ImportEvent::Compaction { from, to } => write!(
                f,
                "compaction: {from} -> {to} tokens, replayed as a `compact` step"
            ),
            ImportEvent::Cleared { kept } => write!(
                f,
                "tool results cleared in place (microcompact_boundary): the first {kept} message tokens kept"
            ),
            ImportEvent::Shrank { from, to, restart } => write!(
                f,
                "prompt shrank from {from} to {to} tokens with no compaction record: replayed as {}",
                if *restart {
                    "a new conversation after the static prefix"
                } else {
                    "an edit at the first changed message"
                }
            ),
            ImportEvent::PrefixEdit { what, replay, .. } => match replay {
                PrefixReplay::EditContext => write!(f, "{what}; replayed as an `edit_context` step"),
                PrefixReplay::NoContextBlock => write!(
                    f,
                    "{what}; no first user message to hold the block: not replayed"
                ),
                PrefixReplay::AddTool => write!(f, "{what}; replayed as an `add_tool` step"),
            },
            ImportEvent::Unlogged { why } => write!(f, "unlogged request: {why}"),
        }
    }
}

/// The description of an event placed from a billed read: where the read stopped against the
/// static prefix, within the TTL (`billed` mode only).
pub(super) fn inferred_what(early: bool, read: u64, static_tokens: u64, ttl: &str) -> String {
    if early {
        format!(
            "early context block edited, {INFERRED} (the read stops at {read}, the end of the {static_tokens}-token static prefix, within the {ttl} TTL)"
        )
    } else {
        format!(
            "tools or system prompt changed, {INFERRED} (the read stops at {read}, inside the {static_tokens}-token static prefix, within the {ttl} TTL)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transcript_events_explain_a_break() {
        let edit = |inferred| ImportEvent::PrefixEdit {
            what: "tools changed (mcp)".into(),
            inferred,
            replay: PrefixReplay::AddTool,
        };
        assert!(edit(false).explains_break());
        assert!(!edit(true).explains_break());
        assert!(!ImportEvent::Unlogged { why: "x".into() }.explains_break());
        assert!(ImportEvent::Compaction { from: 9, to: 2 }.explains_break());
        assert_eq!(
            edit(false).to_string(),
            "tools changed (mcp); replayed as an `add_tool` step"
        );
        assert_eq!(
            ImportEvent::ModelChanged {
                from: "a\nb".into(),
                to: "c".into()
            }
            .to_string(),
            "model changed from a\\nb to c (each model has its own cache)"
        );
    }
}
