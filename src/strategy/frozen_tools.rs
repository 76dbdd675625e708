//! `frozen-tools`: the tools array of the stream's start never changes.
//!
//! Anthropic's tool-use caching page ("Tool use with prompt caching",
//! <https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching>,
//! read 2026-12-01) states the prefix order tools → system → messages, so any change of the
//! tools array invalidates everything after it. Announcing a tool added mid-session with a
//! `tool_addition` content block in the messages, instead of rewriting `tools[]`, is described
//! only by third-party pages found on 2026-12-01 (a public repository's notes citing a beta
//! header and Anthropic's preserved-thinking page, and a research write-up); no page of
//! Anthropic's own documentation stored for search said it, so treat the API feature as
//! unconfirmed. The design is what a proxy in front of Claude Code does to stop tool search
//! from rewriting a warm cache.
//!
//! The stream's tools at its start are rendered in every request, in their original order and
//! definitions. A tool added later (`add_tool`) is announced by a `tool_addition` block carrying
//! its full definition (as many tokens); a re-rendered definition (`replace_tool`) likewise,
//! while the original stays in the array; `reorder_tools` changes nothing; a removed tool stays
//! in the array, and the harness denies calls to it. plancache rejects a scripted call to a
//! removed tool under every strategy (the decision trace must be the same), so that denial is
//! not replayed. Plan mode works as in `permission-mode`.

use std::sync::Arc;

use super::Strategy;
use crate::plan_mode::Mode;
use crate::prompt::{Role, Segment, TokenSource};
use crate::scenario::{Session, Tool};

/// The `frozen-tools` strategy (the module documentation says what it does to the prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct FrozenTools;

/// The `tool_addition` block announcing `tool` at `step` (0-based): its full definition.
fn tool_addition(session: &Session, tool: &Tool, step: usize) -> Arc<Segment> {
    session.message(
        Role::User,
        &format!("step{}:tool-addition:{}", step + 1, tool.name),
        TokenSource::Count(tool.segment.len() as u32),
    )
}

impl Strategy for FrozenTools {
    fn name(&self) -> &'static str {
        "frozen-tools"
    }

    fn summary(&self) -> &'static str {
        "proxy-frozen tools[]: the first request's tools stay; later tools are announced by a tool_addition block, removed ones stay listed and are denied"
    }

    fn tools(&self, _session: &Session, toolset: &[Tool], _mode: Mode) -> Vec<Arc<Segment>> {
        toolset.iter().map(|t| t.segment.clone()).collect()
    }

    /// Always the stream's initial tools, whatever was added, removed or re-rendered since.
    fn tools_for(
        &self,
        _session: &Session,
        initial: &[Tool],
        _toolset: &[Tool],
        _mode: Mode,
    ) -> Vec<Arc<Segment>> {
        initial.iter().map(|t| t.segment.clone()).collect()
    }

    fn renders_denied_calls(&self) -> bool {
        true
    }

    fn tool_added(&self, session: &Session, tool: &Tool, step: usize) -> Vec<Arc<Segment>> {
        vec![tool_addition(session, tool, step)]
    }

    fn tool_replaced(&self, session: &Session, tool: &Tool, step: usize) -> Vec<Arc<Segment>> {
        vec![tool_addition(session, tool, step)]
    }
}
