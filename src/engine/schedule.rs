//! Many streams on one cache and one clock.
//!
//! A scenario's main stream and its subagents, every stream of an imported session, the sessions
//! of one account, or the sessions of a serving pool all share one cache model instance. The
//! schedule holds their requests with their times and replays them in send order: each request is
//! looked up when it is sent and stored with the times its entries become readable (first token)
//! and complete (finish), so a request sent before another's response began does not read it.
//!
//! Streams simulated on the clock (a scenario's main stream and its subagents) learn each
//! request's send time only once the previous one was priced; they take their turns through an
//! [`Agenda`], in the same order.
//!
//! The leading block an earlier session left (tools and system prompt, written before a session
//! here sent anything) is one [`Schedule::prewarm`] request, built by [`leading_block`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::cache::{CacheModel, CacheOutcome};
use crate::prompt::{Request, RequestSettings};
use crate::scenario::Session;
use crate::strategy::Strategy;

/// One request placed on the shared clock.
#[derive(Debug, Clone)]
pub struct Timed {
    /// The stream it belongs to (the caller's index: forks find their parent by it).
    pub stream: usize,
    /// The request as the cache sees it.
    pub request: Request,
    /// When it is sent: its lookup time (ms on the schedule's clock).
    pub sent_ms: u64,
    /// When its response begins: its entries become readable to later requests.
    pub visible_ms: u64,
    /// When its response is complete.
    pub finished_ms: u64,
}

/// The requests each stream has sent so far, as the cache saw them: what a rewrite looks at
/// (a fork's first request continues its parent's latest prompt).
#[derive(Debug, Default)]
pub struct Sent {
    /// The latest request of each stream, by stream index.
    last: HashMap<usize, Request>,
    /// How many requests each stream has sent, by stream index.
    count: HashMap<usize, usize>,
    /// When the latest request of each stream finished (its reply complete), by stream index.
    finished: HashMap<usize, u64>,
}

impl Sent {
    /// The latest request `stream` sent, if any.
    pub fn last(&self, stream: usize) -> Option<&Request> {
        self.last.get(&stream)
    }

    /// How many requests `stream` has sent (the 0-based position of its next one).
    pub fn count(&self, stream: usize) -> usize {
        self.count.get(&stream).copied().unwrap_or(0)
    }

    /// Whether the latest request of `stream` had finished by `at_ms`: its reply is then part of
    /// the conversation a request sent at `at_ms` can continue.
    pub fn finished_by(&self, stream: usize, at_ms: u64) -> bool {
        self.finished.get(&stream).is_some_and(|&f| f <= at_ms)
    }

    fn record(&mut self, stream: usize, req: Request, finished_ms: u64) {
        *self.count.entry(stream).or_default() += 1;
        self.last.insert(stream, req);
        self.finished.insert(stream, finished_ms);
    }
}

/// The one event order of every schedule: the earliest time first, then the lower stream index
/// (for recorded requests, then push order).
fn due_key(at_ms: u64, stream: usize) -> (u64, usize) {
    (at_ms, stream)
}

/// Streams whose next event time is known only once their previous event ran (a simulated
/// replay: a reply's end depends on its cache outcome). Each stream is due at one time; the
/// next to run is the earliest, ties to the lower stream index: the order [`Schedule::run_with`]
/// replays recorded requests in.
#[derive(Debug, Default)]
pub struct Agenda {
    /// The streams due, by (time, stream index), earliest on top.
    due: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Agenda {
    /// An empty agenda.
    pub fn new() -> Self {
        Agenda::default()
    }

    /// Stream `stream` has its next event at `at_ms`.
    pub fn due(&mut self, stream: usize, at_ms: u64) {
        self.due.push(Reverse(due_key(at_ms, stream)));
    }

    /// The stream to run now (removed: the caller puts it back with [`Agenda::due`] when it
    /// has another event).
    pub fn next_due(&mut self) -> Option<usize> {
        self.due.pop().map(|Reverse((_, stream))| stream)
    }
}

/// Requests of many streams, replayed in time order against one cache.
#[derive(Debug, Default)]
pub struct Schedule {
    /// Leading blocks earlier sessions left, each written at its time before any request sent
    /// then.
    prewarm: Vec<(u64, Request)>,
    /// Every request pushed, in push order (outcomes come back in this order).
    entries: Vec<Timed>,
}

impl Schedule {
    /// An empty schedule.
    pub fn new() -> Self {
        Schedule::default()
    }

    /// Adds a request; returns its index in the outcomes of [`Schedule::run`].
    pub fn push(&mut self, t: Timed) -> usize {
        self.entries.push(t);
        self.entries.len() - 1
    }

    /// A leading block an earlier session left: written at `at_ms`, before any request sent at
    /// that time, and given no outcome.
    pub fn prewarm(&mut self, at_ms: u64, mut req: Request) {
        req.sent_at_ms = at_ms;
        self.prewarm.push((at_ms, req));
    }

    /// Every request pushed, in push order.
    pub fn entries(&self) -> &[Timed] {
        &self.entries
    }

    /// Requests pushed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no request was pushed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Replays every request as pushed; outcomes by push index.
    pub fn run(self, cache: &mut dyn CacheModel) -> Vec<CacheOutcome> {
        self.run_with(cache, |_, req, _| req)
    }

    /// Takes back every leading block given with [`Schedule::prewarm`] (a caller replaying the
    /// same requests on several caches, whose leading blocks differ, sets them per replay).
    pub fn clear_prewarm(&mut self) {
        self.prewarm.clear();
    }

    /// Replays every request as pushed, as [`Schedule::run`] does, but leaves the schedule whole:
    /// a caller replaying the same requests on several caches (one per TTL) pushes them once
    /// instead of cloning them per cache.
    pub fn run_ref(&self, cache: &mut dyn CacheModel) -> Vec<CacheOutcome> {
        let mut prewarm = self.prewarm.iter().peekable();
        let mut outcomes = vec![CacheOutcome::default(); self.entries.len()];
        for i in self.order() {
            let t = &self.entries[i];
            while let Some((_, req)) = prewarm.next_if(|(at, _)| *at <= t.sent_ms) {
                let outcome = cache.lookup(req);
                cache.store(req, &outcome, req.sent_at_ms, req.sent_at_ms);
            }
            let outcome = cache.lookup(&t.request);
            cache.store(&t.request, &outcome, t.visible_ms, t.finished_ms);
            outcomes[i] = outcome;
        }
        outcomes
    }

    /// Push indices in replay order: (send time, stream, push order).
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_by_key(|&i| (due_key(self.entries[i].sent_ms, self.entries[i].stream), i));
        order
    }

    /// Replays in (send time, stream, push order) order. `rewrite` sees each request before its
    /// lookup, with what every stream sent so far, and returns the request the cache sees (a fork
    /// re-based on its parent's latest prompt); that request is what [`Sent`] then holds.
    pub fn run_with(
        self,
        cache: &mut dyn CacheModel,
        mut rewrite: impl FnMut(&Timed, Request, &Sent) -> Request,
    ) -> Vec<CacheOutcome> {
        let order = self.order();
        let mut prewarm = self.prewarm.into_iter().peekable();
        let mut outcomes = vec![CacheOutcome::default(); self.entries.len()];
        let mut slots: Vec<Option<Timed>> = self.entries.into_iter().map(Some).collect();
        let mut sent = Sent::default();
        for i in order {
            let Some(mut t) = slots[i].take() else {
                continue;
            };
            while let Some((_, req)) = prewarm.next_if(|(at, _)| *at <= t.sent_ms) {
                let outcome = cache.lookup(&req);
                cache.store(&req, &outcome, req.sent_at_ms, req.sent_at_ms);
            }
            let req = std::mem::replace(&mut t.request, empty_request());
            let req = rewrite(&t, req, &sent);
            let outcome = cache.lookup(&req);
            cache.store(&req, &outcome, t.visible_ms, t.finished_ms);
            outcomes[i] = outcome;
            sent.record(t.stream, req, t.finished_ms);
        }
        outcomes
    }
}

/// The leading block an earlier session of the same account left in the cache: the tools and
/// the first system block as `strategy` renders them in the session's initial mode (later system
/// blocks carry the session's own environment and differ between sessions).
pub fn leading_block(session: &Session, strategy: &dyn Strategy) -> Request {
    let mode = session.scenario.initial_mode;
    let mut segments = strategy.tools(session, &session.tools, mode);
    segments.extend(strategy.system(session, mode).into_iter().take(1));
    Request {
        index: 0,
        stream: "earlier-session".into(),
        step: 0,
        model: strategy.model(session, mode),
        sent_at_ms: 0,
        segments,
        settings: RequestSettings::default(),
        reply: Vec::new(),
        output_tokens: 0,
    }
}

/// A placeholder left where a request was moved out for its rewrite.
fn empty_request() -> Request {
    Request {
        index: 0,
        stream: String::new(),
        step: 0,
        model: String::new(),
        sent_at_ms: 0,
        segments: Vec::new(),
        settings: RequestSettings::default(),
        reply: Vec::new(),
        output_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::cache::{self, PriceTable};
    use crate::prompt::{Encoding, Level, Segment, SegmentKind, TokenSource, Tokenizer};

    fn req(stream: &str, sent: u64, text: &str, tokens: u32) -> Request {
        let tok = Tokenizer::new(Encoding::O200kBase);
        let source = TokenSource::Count(tokens);
        let id = Tokenizer::content_id(text, &source);
        let mut r = empty_request();
        r.stream = stream.into();
        r.model = "claude-sonnet-4-6".into();
        r.sent_at_ms = sent;
        r.segments = vec![Arc::new(Segment {
            id,
            level: Level::System,
            kind: SegmentKind::System,
            label: text.into(),
            tokens: tok.tokens(id, &source),
            breakpoint: None,
        })];
        r
    }

    fn timed(stream: usize, r: Request, finish: u64) -> Timed {
        Timed {
            stream,
            sent_ms: r.sent_at_ms,
            visible_ms: r.sent_at_ms + 1,
            finished_ms: r.sent_at_ms + finish,
            request: r,
        }
    }

    #[test]
    fn agenda_runs_the_earliest_stream_ties_to_the_lower_index() {
        let mut a = Agenda::new();
        a.due(2, 500);
        a.due(0, 900);
        a.due(1, 500);
        assert_eq!(a.next_due(), Some(1));
        a.due(1, 400);
        assert_eq!(a.next_due(), Some(1));
        assert_eq!(a.next_due(), Some(2));
        assert_eq!(a.next_due(), Some(0));
        assert_eq!(a.next_due(), None);
    }

    #[test]
    fn requests_run_in_send_order_across_streams() {
        // Stream 1 sends at t=10 s a 5,000-token prompt that stream 0 sends again at t=20 s,
        // although stream 0's request was pushed first: it must read all 5,000 (after the first
        // one wrote them). Pushed order gives outcomes back: [t=20 s, t=10 s].
        let mut cache = cache::build("ideal", &PriceTable::bundled()).unwrap();
        let mut s = Schedule::new();
        s.push(timed(0, req("a", 20_000, "shared", 5_000), 2_000));
        s.push(timed(1, req("b", 10_000, "shared", 5_000), 2_000));
        let out = s.run(cache.as_mut());
        assert_eq!(out[0].cached_tokens, 5_000);
        assert_eq!(out[1].cached_tokens, 0);
    }

    #[test]
    fn run_ref_replays_as_run_and_keeps_the_schedule() {
        // The same two requests as above, plus a prewarm of the shared prompt at t=0: both read
        // 5,000 tokens. Replayed twice by reference on fresh caches, then once by value: the
        // same outcomes each time; without the prewarm the earlier request reads nothing again.
        let mut s = Schedule::new();
        s.prewarm(0, req("earlier", 0, "shared", 5_000));
        s.push(timed(0, req("a", 20_000, "shared", 5_000), 2_000));
        s.push(timed(1, req("b", 10_000, "shared", 5_000), 2_000));
        let fresh = || cache::build("ideal", &PriceTable::bundled()).unwrap();
        let read = |o: Vec<CacheOutcome>| o.iter().map(|o| o.cached_tokens).collect::<Vec<_>>();
        assert_eq!(read(s.run_ref(fresh().as_mut())), vec![5_000, 5_000]);
        assert_eq!(read(s.run_ref(fresh().as_mut())), vec![5_000, 5_000]);
        s.clear_prewarm();
        assert_eq!(read(s.run_ref(fresh().as_mut())), vec![5_000, 0]);
        assert_eq!(read(s.run(fresh().as_mut())), vec![5_000, 0]);
    }

    #[test]
    fn prewarm_is_written_first_and_rewrite_sees_the_parent() {
        let mut cache = cache::build("ideal", &PriceTable::bundled()).unwrap();
        let mut s = Schedule::new();
        s.prewarm(0, req("earlier", 0, "lead", 3_000));
        s.push(timed(0, req("main", 1_000, "lead", 3_000), 500));
        s.push(timed(1, req("fork", 5_000, "other", 3_000), 500));
        let mut parents = Vec::new();
        let out = s.run_with(cache.as_mut(), |t, r, sent| {
            if t.stream == 1 {
                parents.push(sent.last(0).map(|p| p.stream.clone()));
                assert_eq!(sent.count(0), 1);
                return sent.last(0).cloned().unwrap();
            }
            r
        });
        // The prewarmed 3,000 tokens are read by main; the fork re-based on main reads them too.
        assert_eq!(out[0].cached_tokens, 3_000);
        assert_eq!(out[1].cached_tokens, 3_000);
        assert_eq!(parents, vec![Some("main".to_string())]);
    }
}
