//! `system-message`: mode and system-prompt changes as mid-conversation system messages.
//!
//! Anthropic, "Mid-conversation system messages"
//! (<https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages>,
//! read 2026-12-01): a `{"role": "system"}` message appended to `messages` carries a new system
//! instruction without editing the top-level `system` field, so the cached prefix before it
//! still matches and only the new message is processed; the page lists it for the Claude API and
//! Claude Platform on AWS (not Bedrock, Vertex AI or Foundry) and for Claude Opus 4.8 only.
//!
//! A harness built on it keeps tools and system prompt byte-identical in every mode: the
//! plan-mode instructions (the scenario's `plan_enter` / `plan_exit` reminders, the same tokens
//! Claude Code sends as a user-turn reminder) go into the conversation as system messages, and
//! an `edit_system` step does not touch the system prompt: the changed text is appended as a
//! system message instead (a replacement carries the whole new block, a patch its
//! `patch_tokens`). Writes in plan mode are denied by the permission layer, as in
//! `permission-mode`. Cache effect: as `permission-mode` on mode switches; a system-prompt edit
//! costs only its own tokens instead of recomputing everything after the edited block.
//! plancache models a system message as a message-level segment (labelled `system-message:`):
//! what the cache models see is its tokens and its place, which is what the page describes.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::Mode;
use crate::prompt::Segment;
use crate::scenario::{Session, Tool};

/// The `system-message` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemMessage;

impl Strategy for SystemMessage {
    fn name(&self) -> &'static str {
        "system-message"
    }

    fn summary(&self) -> &'static str {
        "Anthropic mid-conversation system messages: plan-mode instructions and system-prompt edits are appended as {\"role\":\"system\"} messages; tools and system stay byte-identical"
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], _mode: Mode) -> Vec<Arc<Segment>> {
        toolset.iter().map(|t| t.segment.clone()).collect()
    }

    fn renders_denied_calls(&self) -> bool {
        true
    }

    fn system_edit_inline(&self) -> bool {
        true
    }
}
