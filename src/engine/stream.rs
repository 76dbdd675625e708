//! One request stream (one conversation) during a replay, and how its next request reuses the
//! segments of the previous one.

use std::collections::HashSet;
use std::sync::Arc;

use super::replayer::At;
use super::ReplayError;
use crate::plan_mode::Mode;
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
    /// Tools offered to this stream, in prompt order (changed by `add_tool` / `remove_tool`),
    /// read through [`Stream::tools`] and changed through [`Stream::tools_mut`] only, which marks
    /// the rendered head stale.
    tools: Vec<Tool>,
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
    system_edits: Vec<(Arc<Segment>, Arc<Segment>)>,
    /// Counts the changes to what a request's head is rendered from (the tools in force, the
    /// system edits): a head rendered at an older count is stale.
    head_version: u64,
    /// The head the strategy last rendered for this stream (`None` before the first request).
    rendered: Option<RenderedHead>,
    /// The mode and `head_version` of the rendered head `sent` starts with (`None`: `sent`
    /// starts with another head, such as a compaction's without tools, or holds nothing).
    sent_rendered: Option<(Mode, u64)>,
    /// Model of the stream's last request or ping (`None` before the first).
    pub(super) sent_model: Option<String>,
    /// Send time of the stream's last request or ping: keep-alive pings count from it.
    pub(super) last_sent_at_ms: u64,
}

/// The tools and system segments and the model a strategy rendered for a stream's request. A
/// strategy renders from the session, the mode and the stream's tools and system edits only, so
/// the stream's next request in the same mode, with neither changed, has the same head.
struct RenderedHead {
    /// The mode it was rendered in.
    mode: Mode,
    /// The stream's `head_version` when it was rendered.
    version: u64,
    /// Tools, then system blocks, in prompt order.
    segments: Vec<Arc<Segment>>,
    /// The model the strategy picked.
    model: String,
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
            head_version: 0,
            rendered: None,
            sent_rendered: None,
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

    /// The tools offered to this stream, in prompt order.
    pub(super) fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tools offered, to change: the head rendered from them becomes stale.
    pub(super) fn tools_mut(&mut self) -> &mut Vec<Tool> {
        self.head_version += 1;
        &mut self.tools
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
        self.head_version += 1;
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

    /// The prompt segments and the model of the next request in `mode`: the head `render` makes
    /// (tools, system, model) then the conversation. `render` runs only when the mode or what the
    /// head is rendered from changed since it last ran; when the previous request started with
    /// that same head, its segments are kept as they are and only the conversation is compared.
    pub(super) fn rendered_request(
        &mut self,
        mode: Mode,
        render: impl FnOnce(&Stream) -> (Vec<Arc<Segment>>, String),
    ) -> (Vec<Arc<Segment>>, String) {
        let key = (mode, self.head_version);
        let head = match self.rendered.take() {
            Some(head) if (head.mode, head.version) == key => head,
            _ => {
                let (segments, model) = render(self);
                RenderedHead {
                    mode,
                    version: self.head_version,
                    segments,
                    model,
                }
            }
        };
        let model = head.model.clone();
        let segs = if self.sent_rendered == Some(key) && !self.sent.is_empty() {
            let mut segs = std::mem::take(&mut self.sent);
            self.extend_conversation(&mut segs);
            segs
        } else {
            let segs = self.request_segments(head.segments.clone());
            self.sent_rendered = Some(key);
            segs
        };
        self.rendered = Some(head);
        (segs, model)
    }

    /// The prompt segments of the next request: `head` (tools and system) then the conversation.
    /// Reuses the previous request's segment list: only segments after the longest unchanged
    /// prefix are cloned in, so the cost is what the request adds.
    pub(super) fn request_segments(&mut self, mut head: Vec<Arc<Segment>>) -> Vec<Arc<Segment>> {
        self.sent_rendered = None;
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
            self.extend_conversation(&mut segs);
        } else {
            self.unchanged = 0;
            segs.clear();
            segs.extend(head);
            segs.extend(self.conversation.iter().cloned());
            self.conversation_sent(&segs);
        }
        segs
    }

    /// Brings `segs`, the previous request's segments, up to date after its head (kept): the
    /// conversation's unchanged prefix stays, the rest is cloned in.
    fn extend_conversation(&mut self, segs: &mut Vec<Arc<Segment>>) {
        let keep = self
            .dirty_from
            .min(self.sent_conversation)
            .min(self.conversation.len());
        segs.truncate(self.sent_head + keep);
        self.unchanged = segs.len();
        segs.extend(self.conversation[keep..].iter().cloned());
        self.conversation_sent(segs);
    }

    /// Records that `segs` ends with the whole conversation as it stands.
    fn conversation_sent(&mut self, segs: &[Arc<Segment>]) {
        self.sent_head = segs.len() - self.conversation.len();
        self.sent_conversation = self.conversation.len();
        self.dirty_from = usize::MAX;
        debug_assert!(segs[self.sent_head..]
            .iter()
            .zip(&self.conversation)
            .all(|(a, b)| Arc::ptr_eq(a, b)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_mode::Access;
    use crate::prompt::{Level, SegmentKind};

    fn segment(id: u64, level: Level, kind: SegmentKind) -> Arc<Segment> {
        Arc::new(Segment {
            id,
            level,
            kind,
            label: format!("s{id}"),
            tokens: vec![id as u32; 3].into(),
            breakpoint: None,
        })
    }

    fn tool(id: u64) -> Tool {
        Tool {
            name: format!("t{id}"),
            access: Access::Read,
            deferred: false,
            segment: segment(id, Level::Tools, SegmentKind::Tool),
        }
    }

    /// What a strategy renders: the stream's tools, then one system block per mode.
    fn render(renders: &mut Vec<Mode>, s: &Stream, mode: Mode) -> (Vec<Arc<Segment>>, String) {
        renders.push(mode);
        let mut head: Vec<_> = s.tools().iter().map(|t| t.segment.clone()).collect();
        let system = if mode == Mode::Plan { 101 } else { 100 };
        head.push(segment(system, Level::System, SegmentKind::System));
        (head, format!("model-{mode:?}"))
    }

    /// Sends `segs` as the engine does: they become the stream's previous request.
    fn send(s: &mut Stream, segs: Vec<Arc<Segment>>) {
        s.keep_sent(segs);
    }

    fn ids(segs: &[Arc<Segment>]) -> Vec<u64> {
        segs.iter().map(|s| s.id).collect()
    }

    #[test]
    fn the_head_is_rendered_again_only_when_the_mode_or_its_sources_change() {
        let mut renders = Vec::new();
        let mut s = Stream::new("main", vec![tool(1), tool(2)], 0);
        let message = |id| segment(id, Level::Messages, SegmentKind::Reminder);
        s.conversation.push(message(50));
        let mut next = |s: &mut Stream, mode: Mode| {
            let (segs, model) = s.rendered_request(mode, |st| render(&mut renders, st, mode));
            let out = (ids(&segs), model, s.unchanged);
            send(s, segs);
            out
        };
        let first = next(&mut s, Mode::Default);
        assert_eq!(first, (vec![1, 2, 100, 50], "model-Default".into(), 0));
        s.conversation.push(message(51));
        // Same mode, same tools: the previous request's four segments are kept as they are.
        let second = next(&mut s, Mode::Default);
        assert_eq!(second, (vec![1, 2, 100, 50, 51], "model-Default".into(), 4));
        let plan = next(&mut s, Mode::Plan);
        assert_eq!(plan, (vec![1, 2, 101, 50, 51], "model-Plan".into(), 0));
        s.tools_mut().push(tool(3));
        let added = next(&mut s, Mode::Plan);
        assert_eq!(added, (vec![1, 2, 3, 101, 50, 51], "model-Plan".into(), 0));
        let again = next(&mut s, Mode::Plan);
        assert_eq!(again.0, added.0);
        assert_eq!(
            again.2, 6,
            "nothing changed: every segment is the previous request's"
        );
        let original = segment(100, Level::System, SegmentKind::System);
        s.edit_system_block(&original, segment(102, Level::System, SegmentKind::System));
        next(&mut s, Mode::Plan);
        assert_eq!(
            renders,
            [Mode::Default, Mode::Plan, Mode::Plan, Mode::Plan],
            "rendered for the first request, the mode change, the new tool and the system edit"
        );
    }

    #[test]
    fn a_request_after_a_head_of_another_kind_compares_the_heads() {
        let mut renders = Vec::new();
        let mut s = Stream::new("main", vec![tool(1)], 0);
        let (segs, _) =
            s.rendered_request(Mode::Default, |st| render(&mut renders, st, Mode::Default));
        send(&mut s, segs);
        // A compaction's request: the head without its tools.
        let system = segment(100, Level::System, SegmentKind::System);
        let compaction = s.request_segments(vec![system]);
        assert_eq!(ids(&compaction), [100]);
        send(&mut s, compaction);
        let (segs, _) =
            s.rendered_request(Mode::Default, |st| render(&mut renders, st, Mode::Default));
        assert_eq!((ids(&segs), s.unchanged), (vec![1, 100], 0));
        assert_eq!(renders.len(), 1, "the head in force was not rendered again");
    }
}
