//! `history-reset`: implement the approved plan in a fresh conversation.
//!
//! Goose ("clear history and act on this plan") and OpenAI Codex CLI ("implement in a new
//! context") start the executor on a new conversation whose first user message is the approved
//! plan. Tools and system prompt stay as they are (their cached prefix survives), the early
//! context blocks are injected again, and the exploration history is dropped: the first
//! implementation request is short but recomputes everything after the system prompt, and later
//! requests carry less context. Plan mode itself works as in `permission-mode`.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::Mode;
use crate::prompt::Segment;
use crate::scenario::{Session, Tool};

/// The `history-reset` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct HistoryReset;

impl Strategy for HistoryReset {
    fn name(&self) -> &'static str {
        "history-reset"
    }

    fn summary(&self) -> &'static str {
        "Goose / Codex: after approval a new conversation starts with the approved plan as its first user message"
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], _mode: Mode) -> Vec<Arc<Segment>> {
        toolset.iter().map(|t| t.segment.clone()).collect()
    }

    fn renders_denied_calls(&self) -> bool {
        true
    }

    /// Drops the history: context blocks, then the plan (the approval's tokens) as the first
    /// user message.
    fn after_approval(
        &self,
        _session: &Session,
        conversation: &mut Vec<Arc<Segment>>,
        context: &[Arc<Segment>],
        approval: Arc<Segment>,
    ) {
        conversation.clear();
        conversation.extend(context.iter().cloned());
        conversation.push(approval);
    }
}
