//! One request stream (one conversation) during a replay, and how its next request reuses the
//! segments of the previous one.

use std::collections::HashSet;
use std::sync::Arc;

use super::replayer::At;
use super::ReplayError;
use crate::prompt::Segment;
use crate::scenario::Tool;

/// The state of one request stream (one conversation) during a replay.
pub(super) struct Stream {
    /// `main`, or the subagent's name: the `stream` of its requests and rows.
    pub(super) name: String,
    /// The messages so far, in prompt order (after tools, system and early context).
    pub(super) conversation: Vec<Arc<Segment>>,
    /// The stream's simulated clock, in ms since the session start; replies, tool calls and
    /// waits advance it.
    pub(super) clock_ms: u64,
    /// Prompt length of the previous request, to decide whether a request broke the cache.
    pub(super) previous_prompt: Option<u64>,
    /// Tools offered to this stream, in prompt order (changed by `add_tool` / `remove_tool`).
    pub(super) tools: Vec<Tool>,
    /// The stream's tools at its start (what a strategy that freezes the tools array renders).
    pub(super) initial_tools: Vec<Tool>,
    /// Early context blocks in force (main stream): name and segment.
    pub(super) context: Vec<(String, Arc<Segment>)>,
    /// Tools loaded on demand whose reference block is in the conversation.
    pub(super) loaded: HashSet<String>,
    /// Set for a subagent stream.
    pub(super) agent: Option<AgentStream>,
    /// The segments of the stream's previous request, reused (not re-cloned) by the next one:
    /// building request n then costs what it adds, not its length.
    sent: Vec<Arc<Segment>>,
    /// How many of `sent` came before the conversation (tools and system).
    sent_head: usize,
    /// How many conversation segments `sent` holds.
    sent_conversation: usize,
    /// Serial of the request `sent` holds the segments of (0: none; see `cache::SentHint`).
    pub(super) sent_serial: u64,
    /// Leading segments of the next request that are `sent`'s own, by identity (set when the
    /// next request's segments are built, taken when it is sent).
    pub(super) unchanged: usize,
    /// Lowest conversation index replaced or removed since the previous request (`usize::MAX`
    /// when the conversation was only appended to).
    pub(super) dirty_from: usize,
    /// System blocks edited mid-session (main stream): the session's block and the version in
    /// force.
    pub(super) system_edits: Vec<(Arc<Segment>, Arc<Segment>)>,
    /// Model of the stream's last request or ping (`None` before the first).
    pub(super) sent_model: Option<String>,
    /// Send time of the stream's last request or ping: keep-alive pings count from it.
    pub(super) last_sent_at_ms: u64,
}

/// What a subagent stream has of its own.
pub(super) struct AgentStream {
    /// The subagent's own system prompt blocks, in prompt order.
    pub(super) system: Vec<Arc<Segment>>,
    /// The model it runs on (`None`: the one the strategy picks for the mode).
    pub(super) model: Option<String>,
}

impl Stream {
    pub(super) fn new(name: &str, tools: Vec<Tool>, clock_ms: u64) -> Self {
        Stream {
            name: name.to_string(),
            conversation: Vec::new(),
            clock_ms,
            previous_prompt: None,
            initial_tools: tools.clone(),
            tools,
            context: Vec::new(),
            loaded: HashSet::new(),
            agent: None,
            sent: Vec::new(),
            sent_head: 0,
            sent_conversation: 0,
            sent_serial: 0,
            unchanged: 0,
            dirty_from: 0,
            system_edits: Vec::new(),
            sent_model: None,
            last_sent_at_ms: 0,
        }
    }

    /// The segments of the stream's last request (what a keep-alive ping re-sends), moved out
    /// rather than copied: the ping's request carries them and [`Stream::keep_sent`] puts them
    /// back, so a ping costs no copy of the prompt's segment list.
    pub(super) fn take_sent(&mut self) -> Vec<Arc<Segment>> {
        self.unchanged = self.sent.len();
        std::mem::take(&mut self.sent)
    }

    /// The version in force of a system block: its edit, or the block itself.
    pub(super) fn system_block(&self, block: &Arc<Segment>) -> Arc<Segment> {
        self.system_edits
            .iter()
            .find(|(original, _)| original.id == block.id && original.label == block.label)
            .map_or_else(|| block.clone(), |(_, current)| current.clone())
    }

    /// Puts `current` in force for the session's system block `original`.
    pub(super) fn edit_system_block(&mut self, original: &Arc<Segment>, current: Arc<Segment>) {
        match self
            .system_edits
            .iter_mut()
            .find(|(o, _)| Arc::ptr_eq(o, original))
        {
            Some((_, c)) => *c = current,
            None => self.system_edits.push((original.clone(), current)),
        }
    }

    /// Advances the stream's simulated clock by `ms`; a time past what the clock can hold (about
    /// 584 million years) is bad input, not a wrap-around.
    pub(super) fn advance(&mut self, ms: u64, at: &At<'_>) -> Result<(), ReplayError> {
        self.clock_ms = advance(self.clock_ms, ms, || at.place())?;
        Ok(())
    }

    /// Keeps the segments just sent, for the next request to reuse.
    pub(super) fn keep_sent(&mut self, segments: Vec<Arc<Segment>>) {
        self.sent = segments;
    }

    /// Marks the conversation as changed from index `at` on (anything but an append).
    pub(super) fn touched(&mut self, at: usize) {
        self.dirty_from = self.dirty_from.min(at);
    }

    /// The prompt segments of the next request: `head` (tools and system) then the conversation.
    /// Reuses the previous request's segment list: only segments after the longest unchanged
    /// prefix are cloned in, so the cost is what the request adds.
    pub(super) fn request_segments(&mut self, mut head: Vec<Arc<Segment>>) -> Vec<Arc<Segment>> {
        let mut segs = std::mem::take(&mut self.sent);
        // Strategies may build equal head segments afresh each request (tool stubs, plan-mode
        // system blocks): keep the previous `Arc` for equal content, so the request shares its
        // prefix by identity and the cache models' per-stream memory applies.
        if head.len() == self.sent_head {
            for (new, old) in head.iter_mut().zip(&segs) {
                if !Arc::ptr_eq(new, old) && same_content(new, old) {
                    *new = old.clone();
                }
            }
        }
        let same_head =
            head.len() == self.sent_head && head.iter().zip(&segs).all(|(a, b)| Arc::ptr_eq(a, b));
        if same_head {
            let keep = self
                .dirty_from
                .min(self.sent_conversation)
                .min(self.conversation.len());
            segs.truncate(self.sent_head + keep);
            self.unchanged = segs.len();
            segs.extend(self.conversation[keep..].iter().cloned());
        } else {
            self.unchanged = 0;
            segs.clear();
            segs.extend(head);
            segs.extend(self.conversation.iter().cloned());
        }
        self.sent_head = segs.len() - self.conversation.len();
        self.sent_conversation = self.conversation.len();
        self.dirty_from = usize::MAX;
        debug_assert!(segs[self.sent_head..]
            .iter()
            .zip(&self.conversation)
            .all(|(a, b)| Arc::ptr_eq(a, b)));
        segs
    }

    pub(super) fn context_segments(&self) -> Vec<Arc<Segment>> {
        self.context.iter().map(|(_, s)| s.clone()).collect()
    }
}

/// Two segments that differ only by allocation: equal content ids mean equal tokens; the rest
/// (label, level, kind, breakpoint) is what explanations and breakpoint rules read.
fn same_content(a: &Segment, b: &Segment) -> bool {
    a.id == b.id
        && a.level == b.level
        && a.kind == b.kind
        && a.breakpoint == b.breakpoint
        && a.tokens.len() == b.tokens.len()
        && a.label == b.label
}

/// `clock + ms`, or an error naming `place()` when the sum cannot be represented.
pub(super) fn advance(
    clock: u64,
    ms: u64,
    place: impl FnOnce() -> String,
) -> Result<u64, ReplayError> {
    clock.checked_add(ms).ok_or_else(|| ReplayError {
        place: place(),
        message: format!(
            "the simulated clock overflows: {clock} ms plus {ms} ms is past the largest time plancache can represent"
        ),
        hint: "check the durations (`wait`, `duration`, [timing]) for extra digits".into(),
    })
}
