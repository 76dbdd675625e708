//! The steps after a reply: the items logged after it (mode switches, compactions, clearings,
//! unlogged requests, user text and results no call carried), then the step its boundary needs
//! (a shrink, an `edit_context`, an `add_tool`).

use super::boundary::Boundary;
use super::event::ImportEvent;
use super::stream::Emitter;
use super::CONTEXT_BLOCK;
use super::{carries_tokens, clamp, compact, piece_step, shrink, tool_id, wait, Piece, SendTime};
use crate::import::Item;
use crate::plan_mode::{Access, Mode};
use crate::scenario::{ContextBlock, Step, ToolDef, Turn};

impl Emitter<'_, '_> {
    /// Everything after request `k`'s reply not carried by a call, in order; mode switches
    /// where they happened.
    pub(super) fn after_items(
        &mut self,
        k: usize,
        boundary: &Boundary,
        pieces: &[Piece<'_>],
        answered: &[bool],
    ) {
        let after = &self.rounds[k].1;
        let mut piece_iter = pieces.iter().zip(answered.iter()).skip(1);
        for (idx, i) in after.iter().enumerate() {
            match i {
                Item::Mode { mode: m, .. } => self.switch_mode(*m),
                Item::Compaction { at_ms, .. } => {
                    if let Some((p, _)) = piece_iter.next() {
                        self.compaction(*at_ms, p.tokens);
                    }
                }
                Item::Cleared { tool_use_ids, .. } => {
                    if let (Some(next), Boundary::Cleared(_)) = (self.rounds.get(k + 1), boundary) {
                        // Tokens of the pieces that follow this item.
                        let before = after[..=idx].iter().filter(|i| carries_tokens(i)).count();
                        let rest: u64 = pieces[1 + before..].iter().map(|p| p.tokens).sum();
                        let p_next = next.0.usage.prompt_tokens();
                        self.clear_in_place(k, tool_use_ids, p_next, rest);
                    }
                }
                Item::Unlogged {
                    why,
                    instruction,
                    at_ms,
                } => self.unlogged(why, *instruction, *at_ms),
                _ if !carries_tokens(i) => {}
                _ => {
                    if let Some((p, done)) = piece_iter.next() {
                        if !done && p.tokens > 0 {
                            self.steps.push(piece_step(i, p.tokens));
                            self.msgs.push((p.tokens, tool_id(i)));
                        }
                    }
                }
            }
        }
    }

    fn switch_mode(&mut self, m: Mode) {
        if m != self.mode {
            if m == Mode::Plan {
                self.pre_plan = self.mode;
            }
            self.steps.push(Step::Mode(m));
            self.mode = m;
        }
    }

    /// A request the log shows was sent at `at_ms` (not a logged request): it waits there,
    /// and, unless the stream's fork logs it, sends itself.
    fn mark_sent(&mut self, at_ms: u64, logged_elsewhere: bool) {
        self.steps.extend(wait(at_ms.saturating_sub(self.clock)));
        self.clock = self.clock.max(at_ms);
        let at = self.clock.saturating_sub(self.inputs.origin);
        if !logged_elsewhere {
            self.timeline.push(SendTime {
                sent_ms: at,
                visible_ms: at,
                finished_ms: at,
            });
        }
    }

    /// The summarisation request, sent with the conversation's own tools, system and
    /// messages: logged by no assistant record, placed at the boundary record (its summary
    /// arrived by then).
    fn compaction(&mut self, at_ms: u64, summary: u64) {
        let logged = self.inputs.compaction_logged;
        self.mark_sent(at_ms, logged);
        self.steps.push(compact(summary, !logged));
        self.restart_from(summary);
    }

    /// The prefix before the first cleared result survives; the summary stands for the rest
    /// of the conversation with the results cleared.
    fn clear_in_place(&mut self, k: usize, ids: &[String], p_next: u64, rest: u64) {
        let mut pos = 0u64;
        let mut first_cleared = None;
        for (n, id) in &self.msgs {
            if id.as_ref().is_some_and(|id| ids.contains(id)) {
                first_cleared = Some(pos);
                break;
            }
            pos += n;
        }
        let total = p_next
            .saturating_sub(self.static_tokens)
            .saturating_sub(rest);
        let keep = first_cleared.unwrap_or(total);
        let step = shrink(&mut self.msgs, keep, total);
        self.steps.push(step);
        let event = ImportEvent::Cleared {
            kept: keep.min(total),
        };
        let next = &self.rounds[k + 1].0.request_id;
        self.notes.push(format!("request {next}: {event}"));
        self.events_next.push(event);
    }

    /// Sent and refreshing the cache, but not a recorded request. Its own closing message is
    /// not in the log: one token stands for it (only its place matters: the entry it writes
    /// ends past the conversation). With none, the entry ends at the conversation's last
    /// message.
    fn unlogged(&mut self, why: &str, instruction: bool, at_ms: u64) {
        self.mark_sent(at_ms, false);
        self.steps.push(Step::Assistant(Turn {
            tokens: Some(u32::from(instruction)),
            unlogged: true,
            ..Turn::default()
        }));
        self.events_next.push(ImportEvent::Unlogged {
            why: why.to_string(),
        });
    }

    /// The step the boundary after request `k` needs, once the items after it are written.
    pub(super) fn boundary_step(
        &mut self,
        k: usize,
        boundary: &Boundary,
        pieces: &[Piece<'_>],
        answered: &[bool],
    ) {
        let Some(next) = self.rounds.get(k + 1).map(|(n, _)| *n) else {
            return;
        };
        let p_next = next.usage.prompt_tokens();
        match boundary {
            Boundary::TurnStart(keep) => {
                // A new turn: the last turn's reasoning items leave the prompt, which is the
                // same up to where that turn began.
                let total = p_next.saturating_sub(self.static_tokens);
                let step = shrink(&mut self.msgs, *keep, total);
                self.steps.push(step);
            }
            Boundary::Rewind => self.rewind(k, p_next, pieces, answered),
            Boundary::EarlyEdit(_, inferred) if self.context.is_some() => {
                if *inferred {
                    self.inferred_steps.push(self.steps.len());
                }
                self.steps.push(Step::EditContext(ContextBlock {
                    name: CONTEXT_BLOCK.into(),
                    tokens: self.context.map(clamp),
                    ..ContextBlock::default()
                }));
            }
            Boundary::ToolsChanged(_, inferred) => {
                if *inferred {
                    self.inferred_steps.push(self.steps.len());
                }
                self.steps.push(Step::AddTool(ToolDef {
                    name: format!("added-before-{}", next.request_id),
                    access: Some(Access::Read),
                    tokens: Some(0),
                    description: None,
                    schema: None,
                    deferred: false,
                    cache_control: None,
                }));
            }
            _ => {}
        }
    }

    /// The prompt shrank with no record saying why (a rewind, a cleared attachment). A Claude
    /// Code prompt that shrinks so was, in most real cases, sent as a new conversation (a
    /// rewind to the start, "clear context" after a plan, a re-sent resume): the read falls
    /// back to the static prefix. A Codex prompt is edited at its first changed message: the
    /// new prompt keeps the longest run of messages that, with the text added since, fits in
    /// it. See `Harness::shrink_restarts`.
    fn rewind(&mut self, k: usize, p_next: u64, pieces: &[Piece<'_>], answered: &[bool]) {
        let total = p_next.saturating_sub(self.static_tokens);
        let restart = self.stream.harness.shrink_restarts();
        let keep = if restart {
            0
        } else {
            let new: u64 = pieces
                .iter()
                .zip(answered)
                .skip(1)
                .filter(|(_, a)| !**a)
                .map(|(p, _)| p.tokens)
                .sum();
            total.saturating_sub(new)
        };
        let step = shrink(&mut self.msgs, keep, total);
        self.steps.push(step);
        let event = ImportEvent::Shrank {
            from: self.rounds[k].0.usage.prompt_tokens(),
            to: p_next,
            restart,
        };
        let next = &self.rounds[k + 1].0.request_id;
        self.notes.push(format!("request {next}: {event}"));
        self.events_next.push(event);
    }
}
