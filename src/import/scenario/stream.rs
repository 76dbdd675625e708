//! One stream's scenario, in stages: cut the stream at its requests ([`Cut`]), size the static
//! prefix and the first messages ([`Prefix`]), classify what happened between requests
//! ([`super::boundary`]), then write the steps request by request ([`Emitter`], whose per-item
//! and per-boundary steps are in [`super::emit`] and the calls in [`super::calls`]).

use super::boundary::{self, Boundary};
use super::event::{ImportEvent, PrefixReplay};
use super::{
    apportion, carries_tokens, clamp, majority_family, model_family, piece_step, text_of, tool_id,
    wait, weight, Built, Events, ImportedScenario, Piece, RecordedRequest, Rounds, SendTime,
    StreamInputs, LATE_SEND_MS,
};
use crate::import::{ApiRequest, Block, Harness, Item, Stream, StreamKind};
use crate::plan_mode::Mode;
use crate::scenario::{Blocks, Content, Step, Turn};

/// A stream cut at its requests.
pub(super) struct Cut<'s> {
    /// Items before the first request (the first messages).
    pub pre: Vec<&'s Item>,
    /// Each request with the items logged after it, up to the next request.
    pub rounds: Vec<(&'s ApiRequest, Vec<&'s Item>)>,
}

impl<'s> Cut<'s> {
    fn of(s: &'s Stream) -> Cut<'s> {
        let mut pre: Vec<&Item> = Vec::new();
        let mut rounds: Vec<(&ApiRequest, Vec<&Item>)> = Vec::new();
        for item in &s.items {
            match item {
                Item::Request(r) => rounds.push((r, Vec::new())),
                other => match rounds.last_mut() {
                    Some((_, after)) => after.push(other),
                    None => pre.push(other),
                },
            }
        }
        Cut { pre, rounds }
    }
}

/// The stream's static prefix (tools + system) and its first messages, sized.
pub(super) struct Prefix {
    /// Tokens of the tools and system blocks, sent with every request of the stream.
    pub static_tokens: u64,
    /// The leading block an earlier session left (main stream: the first read, capped).
    pub shared_prefix: u64,
    /// Each tool's estimated size, in the order of the stream kind's tool names.
    pub tool_tokens: Vec<u32>,
    /// The system blocks: one, or two split at the shared block (`billed` mode only).
    pub system: Blocks,
    /// Sizes of the token-carrying items before the first request, in order.
    pub pre_sizes: Vec<u64>,
}

impl Prefix {
    /// The first prompt is static prefix + first messages: the first messages get their own
    /// token counts and the static prefix the rest.
    fn size(s: &Stream, cut: &Cut<'_>, inputs: &StreamInputs<'_>, model: &str) -> Prefix {
        let first = cut.rounds[0].0;
        let p1 = first.usage.prompt_tokens();
        let pre_weights: Vec<u64> = cut
            .pre
            .iter()
            .filter(|i| carries_tokens(i))
            .map(|i| weight(inputs.tok, &text_of(i)))
            .collect();
        let pre_sum: u64 = pre_weights.iter().sum();
        // The static prefix is sent with every request of the stream: it never exceeds a later
        // prompt of the stream's own model (a first request that carried context the transcript
        // does not log, or a side request on another model, must not size it).
        let cap = cut
            .rounds
            .iter()
            .skip(1)
            .filter(|(r, _)| model_family(&r.model) == model)
            .map(|(r, _)| r.usage.prompt_tokens().saturating_sub(1))
            .min()
            .unwrap_or(u64::MAX);
        let static_tokens = inputs
            .fixed_static
            .unwrap_or_else(|| p1.saturating_sub(pre_sum))
            .min(p1)
            .min(cap);
        let shared_prefix = match s.kind {
            StreamKind::Main => first.usage.cache_read_input_tokens.min(static_tokens),
            StreamKind::Agent => 0,
        };
        let (tool_tokens, system) = split_static(s, inputs, static_tokens, shared_prefix);
        Prefix {
            static_tokens,
            shared_prefix,
            tool_tokens,
            system,
            pre_sizes: apportion(p1 - static_tokens, &pre_weights),
        }
    }
}

/// The static prefix cut into tools and system. Only the main stream is split at the block an
/// earlier session wrote, and only in `billed` mode (the split is placed from a cache read);
/// subagents share one static block. The tools array's share is estimated from Claude Code's
/// published tool descriptions (the transcript logs no definition); the system holds the rest.
fn split_static(
    s: &Stream,
    inputs: &StreamInputs<'_>,
    static_tokens: u64,
    shared_prefix: u64,
) -> (Vec<u32>, Blocks) {
    let billed = inputs.opts.events == Events::Billed;
    let split =
        billed && s.kind == StreamKind::Main && shared_prefix > 0 && shared_prefix < static_tokens;
    let tool_tokens: Vec<u32> = match s.harness {
        Harness::ClaudeCode => crate::import::tool_sizes::sized(
            inputs.tool_names,
            if split { shared_prefix } else { static_tokens },
        ),
        Harness::Codex => vec![0; inputs.tool_names.len()],
    };
    let tools_size: u64 = tool_tokens.iter().map(|&n| n as u64).sum();
    let system = if split {
        Blocks::Many(vec![
            Content::tokens(clamp(shared_prefix - tools_size)),
            Content::tokens(clamp(static_tokens - shared_prefix)),
        ])
    } else {
        Blocks::One(Content::tokens(clamp(static_tokens - tools_size)))
    };
    (tool_tokens, system)
}

/// The scenario of one stream as it is being written, request by request.
pub(super) struct Emitter<'s, 'c> {
    /// The stream being replayed (its harness decides how shrinking prompts are replayed).
    pub stream: &'s Stream,
    /// Transcript-wide inputs: clock origin, tokenizer, options, the TTL of the main thread.
    pub inputs: StreamInputs<'s>,
    /// The items before the first request.
    pub pre: &'c [&'s Item],
    /// The stream's requests, each with the items logged after it.
    pub rounds: &'c Rounds<'s>,
    /// What happened after each request but the last ([`boundary::classify`]).
    pub boundaries: &'c [Boundary],
    /// The model family most requests ran on: the scenario's model.
    pub model: String,
    /// Tokens of the tools and system blocks.
    pub static_tokens: u64,
    /// Tokens of the early context block, when the scenario declares one (an early-block edit
    /// needs it; the stream's first user message becomes it).
    pub context: Option<u64>,
    /// The scenario's steps so far.
    pub steps: Vec<Step>,
    /// One row per logged request, in order: the i-th assistant step replays the i-th row.
    pub requests: Vec<RecordedRequest>,
    /// Findings for the scenario header.
    pub notes: Vec<String>,
    /// Events recognised since the last request: attached to the next one.
    pub events_next: Vec<ImportEvent>,
    /// Steps placed from a billed cache read (indices into `steps`).
    pub inferred_steps: Vec<usize>,
    /// Every request the scenario sends (logged and unlogged), with its recorded times.
    pub timeline: Vec<SendTime>,
    /// The permission mode the replay is in now.
    pub mode: Mode,
    /// The mode before the last entry into plan mode (an approval returns to it).
    pub pre_plan: Mode,
    /// Recorded time (epoch ms) the replay's clock stands at: when the last request finished.
    /// Providers' TTLs run from there; the engine adds its own TTFT on top.
    pub clock: u64,
    /// The conversation as the replay holds it: (tokens, tool_use_id of a tool result) per
    /// message, so a clearing in place knows where the first cleared result sits.
    pub msgs: Vec<(u64, Option<String>)>,
}

pub(super) fn build_stream(s: &Stream, inputs: StreamInputs<'_>) -> Built {
    let cut = Cut::of(s);
    let model = majority_family(cut.rounds.iter().map(|(r, _)| r.model.as_str()));
    let mut prefix = Prefix::size(s, &cut, &inputs, &model);
    let boundaries = boundary::classify(s, &cut.rounds, prefix.static_tokens, inputs.opts);
    // An early-block edit needs the block declared: the stream's first user message (where the
    // harness injects memory and instruction files) becomes the scenario's context block.
    let first_user = cut.pre.iter().position(|i| matches!(i, Item::User { .. }));
    let context = match first_user {
        Some(j)
            if boundaries
                .iter()
                .any(|b| matches!(b, Boundary::EarlyEdit(..))) =>
        {
            let k = cut.pre[..j].iter().filter(|i| carries_tokens(i)).count();
            Some(std::mem::take(&mut prefix.pre_sizes[k]))
        }
        _ => None,
    };
    let mut e = Emitter {
        stream: s,
        inputs,
        pre: &cut.pre,
        rounds: &cut.rounds,
        boundaries: &boundaries,
        model: model.clone(),
        static_tokens: prefix.static_tokens,
        context,
        steps: Vec::new(),
        requests: Vec::new(),
        notes: model_notes(&cut.rounds, &model),
        events_next: Vec::new(),
        inferred_steps: Vec::new(),
        timeline: Vec::new(),
        mode: s.initial_mode,
        pre_plan: s.initial_mode,
        clock: 0,
        msgs: Vec::new(),
    };
    e.first_messages(&prefix.pre_sizes, first_user);
    for k in 0..cut.rounds.len() {
        e.round(k);
    }
    let imported = e.finish(&prefix);
    Built {
        imported,
        static_tokens: prefix.static_tokens,
    }
}

/// A note for every request that ran on another model family than the scenario's.
fn model_notes(rounds: &Rounds<'_>, model: &str) -> Vec<String> {
    rounds
        .iter()
        .filter(|(r, _)| model_family(&r.model) != model)
        .map(|(r, _)| {
            format!(
                "request {} ran on {} (the scenario replays every request on {model})",
                r.request_id, r.model
            )
        })
        .collect()
}

impl<'s, 'c> Emitter<'s, 'c> {
    /// The wait before the stream's first record, and the messages before its first request.
    fn first_messages(&mut self, sizes: &[u64], first_user: Option<usize>) {
        let pre = self.pre;
        let start = self.rounds[0]
            .0
            .first_at_ms
            .min(pre.first().map_or(u64::MAX, |i| i.at_ms()));
        self.steps
            .extend(wait(start.saturating_sub(self.inputs.origin)));
        self.clock = start;
        if let Some(n) = self.context {
            self.msgs.push((n, None));
        }
        let mut sizes = sizes.iter().copied();
        for (j, i) in pre.iter().enumerate() {
            match i {
                Item::Mode { mode: m, .. } => {
                    self.steps.push(Step::Mode(*m));
                    self.mode = *m;
                }
                _ if !carries_tokens(i) => {}
                _ => {
                    let n = sizes.next().unwrap_or(0);
                    if !(self.context.is_some() && Some(j) == first_user) {
                        self.steps.push(piece_step(i, n));
                        self.msgs.push((n, tool_id(i)));
                    }
                }
            }
        }
    }

    /// Request `k`: its send time, its reply and the calls it answers, the items after it and
    /// the step its boundary needs.
    fn round(&mut self, k: usize) {
        let r = self.rounds[k].0;
        self.send(k);
        let boundary = self.boundaries.get(k).cloned().unwrap_or(Boundary::None);
        // Within a turn, a harness that re-sends the turn's reasoning (Codex) repeats it in the
        // next prompt: it is part of the reply the next prompt starts with, and the cache holds
        // it as generated. (The recorded reasoning count is output usage, not a cache figure.)
        let carried = self.stream.harness.reasoning_in_turn()
            && self
                .boundaries
                .get(k)
                .is_some_and(|b| !matches!(b, Boundary::TurnStart(_) | Boundary::Compact));
        let reasoning = if carried { r.usage.reasoning_tokens } else { 0 };
        let mut pieces = self.pieces(k);
        let implicit_summary = self.size_pieces(k, &boundary, carried, &mut pieces);
        let answers = self.answer_calls(k, &pieces);
        let family = model_family(&r.model);
        self.steps.push(Step::Assistant(Turn {
            tokens: Some(clamp(pieces[0].tokens)),
            calls: answers.calls,
            model: (family != self.model && !r.model.is_empty()).then_some(family),
            // Recorded reasoning (Codex): billed output that the next prompt does not repeat,
            // unless the turn goes on (then it is part of the reply, above).
            reasoning_tokens: clamp(r.usage.reasoning_tokens - reasoning),
            ..Turn::default()
        }));
        self.msgs.push((pieces[0].tokens, None));
        for (p, _) in pieces.iter().zip(&answers.answered).filter(|(_, a)| **a) {
            self.msgs.push((p.tokens, p.item.and_then(tool_id)));
        }
        if let Some(a) = answers.plan_answer {
            self.steps.push(a);
        }
        if answers.trailing > 0 {
            self.steps.push(super::user_tokens(answers.trailing));
        }
        self.after_items(k, &boundary, &pieces, &answers.answered);
        if let Some(n) = implicit_summary {
            self.steps.push(super::compact(n, false));
            self.restart_from(n);
        }
        self.boundary_step(k, &boundary, &pieces, &answers.answered);
    }

    /// The conversation restarts from a summary of `n` tokens (after the context block).
    pub(super) fn restart_from(&mut self, n: u64) {
        self.msgs.clear();
        if let Some(c) = self.context {
            self.msgs.push((c, None));
        }
        self.msgs.push((n, None));
    }

    /// When request `k` was sent and finished; its row, with the events recognised before it.
    fn send(&mut self, k: usize) {
        let r = self.rounds[k].0;
        let origin = self.inputs.origin;
        // Sent when the last item before it was written; a response written minutes after that
        // (a slow first block) was still sent then. A response written more than
        // `LATE_SEND_MS` after its input was not that slow: the machine slept and the request
        // went out when it woke (shared notes: responses 53-130 min after their input), so it
        // was sent at its first record.
        let input = sent_at(r, self.before(k));
        let sent = if r.first_at_ms.saturating_sub(input) > LATE_SEND_MS {
            r.first_at_ms
        } else {
            input
        };
        self.steps.extend(wait(sent.saturating_sub(self.clock)));
        // The clock stands where the response finished (its last record was written).
        self.clock = self
            .inputs
            .t
            .finished_at_ms
            .get(&r.request_id)
            .copied()
            .unwrap_or(r.first_at_ms)
            .max(sent);
        let visible = r.first_at_ms.clamp(sent, self.clock);
        self.timeline.push(SendTime {
            sent_ms: sent.saturating_sub(origin),
            visible_ms: visible.saturating_sub(origin),
            finished_ms: self.clock.saturating_sub(origin),
        });
        if k > 0 && model_family(&self.rounds[k - 1].0.model) != model_family(&r.model) {
            self.events_next.push(ImportEvent::ModelChanged {
                from: self.rounds[k - 1].0.model.clone(),
                to: r.model.clone(),
            });
        }
        self.requests.push(RecordedRequest {
            request_id: r.request_id.clone(),
            line: r.line,
            model: r.model.clone(),
            usage: r.usage,
            sent_at_ms: sent.saturating_sub(origin),
            events: std::mem::take(&mut self.events_next),
            mode: self.mode,
            finished_at_ms: self.clock.saturating_sub(origin),
        });
    }

    /// The items logged between request `k - 1` and request `k` (for the first request, the
    /// items before it).
    fn before(&self, k: usize) -> &'c [&'s Item] {
        if k == 0 {
            self.pre
        } else {
            &self.rounds[k - 1].1
        }
    }

    /// What request `k`'s reply and the items after it add to the next prompt, weighted.
    fn pieces(&self, k: usize) -> Vec<Piece<'s>> {
        let (r, after) = (self.rounds[k].0, &self.rounds[k].1);
        let reply_text: String = r
            .blocks
            .iter()
            .map(Block::visible_text)
            .collect::<Vec<_>>()
            .join("\n");
        let tok = self.inputs.tok;
        let mut pieces = vec![Piece {
            item: None,
            weight: weight(tok, &reply_text),
            tokens: 0,
        }];
        for i in after.iter().filter(|i| carries_tokens(i)) {
            pieces.push(Piece {
                item: Some(*i),
                weight: weight(tok, &text_of(i)),
                tokens: 0,
            });
        }
        pieces
    }

    /// The next prompt's growth split over the pieces, by what the boundary says; returns the
    /// size of a compaction's summary when no summary record holds it.
    fn size_pieces(
        &mut self,
        k: usize,
        boundary: &Boundary,
        carried: bool,
        pieces: &mut [Piece<'s>],
    ) -> Option<u64> {
        let Some((next, _)) = self.rounds.get(k + 1) else {
            own_sizes(pieces);
            return None;
        };
        match boundary {
            Boundary::Compact => return self.size_compaction(k, pieces),
            // The prompt shrank in place: new pieces keep their own sizes; the step that
            // shrinks the conversation makes up the rest (after the items).
            Boundary::Cleared(_) | Boundary::Rewind | Boundary::TurnStart(_) => own_sizes(pieces),
            _ => {
                let r = self.rounds[k].0;
                let growth = next.usage.prompt_tokens() - r.usage.prompt_tokens();
                split_growth(pieces, growth, carried.then_some(r.usage.output_tokens));
                self.prefix_edit_event(next, boundary);
            }
        }
        None
    }

    /// Pieces before the summary are dropped by the compaction: their own sizes. The next
    /// prompt is static + context + summary + what follows the summary.
    fn size_compaction(&mut self, k: usize, pieces: &mut [Piece<'s>]) -> Option<u64> {
        let (r, next) = (self.rounds[k].0, self.rounds[k + 1].0);
        let cut = pieces
            .iter()
            .position(|p| matches!(p.item, Some(Item::Compaction { .. })))
            .unwrap_or(pieces.len());
        own_sizes(&mut pieces[..cut]);
        let budget = next
            .usage
            .prompt_tokens()
            .saturating_sub(self.static_tokens + self.context.unwrap_or(0));
        let mut w: Vec<u64> = pieces[cut..].iter().map(|p| p.weight.max(1)).collect();
        if cut == pieces.len() {
            w.push(1); // no summary record: the whole budget is the summary
        }
        let parts = apportion(budget, &w);
        for (p, n) in pieces[cut..].iter_mut().zip(&parts) {
            p.tokens = *n;
        }
        let event = ImportEvent::Compaction {
            from: r.usage.prompt_tokens(),
            to: next.usage.prompt_tokens(),
        };
        self.notes
            .push(format!("request {}: {event}", next.request_id));
        self.events_next.push(event);
        (cut == pieces.len()).then(|| parts[parts.len() - 1])
    }

    /// The event of an early-block edit or a tools change before `next`, as it is replayed.
    fn prefix_edit_event(&mut self, next: &ApiRequest, boundary: &Boundary) {
        let (what, inferred, replay) = match boundary {
            Boundary::EarlyEdit(w, inf) if self.context.is_some() => {
                (w, *inf, PrefixReplay::EditContext)
            }
            Boundary::EarlyEdit(w, inf) => (w, *inf, PrefixReplay::NoContextBlock),
            Boundary::ToolsChanged(w, inf) => (w, *inf, PrefixReplay::AddTool),
            _ => return,
        };
        let event = ImportEvent::PrefixEdit {
            what: what.clone(),
            inferred,
            replay,
        };
        self.notes
            .push(format!("request {}: {event}", next.request_id));
        self.events_next.push(event);
    }

    /// The stream's scenario and what was recorded for each of its requests.
    fn finish(self, prefix: &Prefix) -> ImportedScenario {
        let s = self.stream;
        let (ttl, ttl_source) =
            super::stream_ttl(s, self.rounds, self.inputs.opts, self.inputs.main_ttl);
        let scenario = super::assemble::scenario(
            s,
            &self.inputs,
            &self.model,
            prefix,
            self.context,
            self.rounds.len(),
            self.steps,
        );
        ImportedScenario {
            stream: s.name.clone(),
            kind: s.kind,
            scenario,
            requests: self.requests,
            ttl,
            ttl_source,
            shared_prefix: prefix.shared_prefix,
            notes: self.notes,
            timeline: self.timeline,
            inferred_steps: self.inferred_steps,
        }
    }
}

/// When a request was sent: when the last item before it was written, at the latest its first
/// record.
fn sent_at(r: &ApiRequest, before: &[&Item]) -> u64 {
    before
        .iter()
        .map(|i| i.at_ms())
        .filter(|&a| a <= r.first_at_ms)
        .max()
        .unwrap_or(r.first_at_ms)
}

/// Every piece keeps its own token count.
fn own_sizes(pieces: &mut [Piece<'_>]) {
    for p in pieces.iter_mut() {
        p.tokens = p.weight;
    }
}

/// The recorded growth of the prompt split over the pieces in proportion to their weights.
/// With `carried_output` (a harness that re-sends the turn's reasoning), the whole response
/// (reasoning and visible output, as billed) is repeated: its size is known, and the pieces
/// after it share the rest.
fn split_growth(pieces: &mut [Piece<'_>], growth: u64, carried_output: Option<u64>) {
    match carried_output {
        Some(output) if pieces.len() > 1 => {
            pieces[0].tokens = output.min(growth);
            let w: Vec<u64> = pieces[1..].iter().map(|p| p.weight).collect();
            let rest = apportion(growth - pieces[0].tokens, &w);
            for (p, n) in pieces[1..].iter_mut().zip(rest) {
                p.tokens = n;
            }
        }
        _ => {
            let w: Vec<u64> = pieces.iter().map(|p| p.weight).collect();
            for (p, n) in pieces.iter_mut().zip(apportion(growth, &w)) {
                p.tokens = n;
            }
        }
    }
}
