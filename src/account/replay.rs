//! Replaying one session of the account under one setting (strategy, TTL, keep-alive), the way
//! `validate` replays a transcript: every stream's requests on one cache instance and one clock
//! ([`crate::engine::schedule`]), in send order across streams at their recorded times, with the
//! harness's breakpoint layout and TTLs, plus the account's leading block when the timeline says
//! it is alive.

use super::AccountError;
use crate::util::ScenarioError;
use std::sync::Arc;
use std::time::Duration;

use super::figures::{Counters, RequestFigures};
use crate::cache::{self, CacheModel, CacheOutcome, PriceTable};
use crate::engine::schedule::{leading_block, Schedule, Timed};
use crate::engine::{self, ReplayEnv};
use crate::import::scenario::SendTime;
use crate::import::{ImportOptions, ImportedScenario, StreamKind, Transcript};
use crate::metrics::RequestKind;
use crate::prompt::{Request, Segment, Tokenizer, Ttl};
use crate::scenario::{Scenario, Session, Step, WaitDuration};
use crate::strategy::Strategy;

/// Pings that hold the cache warm while the human is away: every `every`, the harness re-sends
/// the stream's last request with `max_tokens = 1` (the engine's `keepalive` on waits), during
/// at most `limit` of each idle gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Time between two pings.
    pub every: Duration,
    /// Longest stretch of an idle gap the pings cover.
    pub limit: Duration,
}

/// One way of running the account's sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The plan-mode strategy the sessions are replayed under.
    pub strategy: String,
    /// `None`: the TTLs the transcripts wrote.
    pub ttl: Option<Ttl>,
    /// Keep-alive pings during idle gaps (`None`: none).
    pub keepalive: Option<Keepalive>,
}

impl Setting {
    /// The setting as the report names it (`permission-mode / ttl 1h / keepalive 4m`).
    pub fn label(&self) -> String {
        format!(
            "{} / ttl {} / keepalive {}",
            self.strategy,
            self.ttl.map_or("as recorded", |t| t.as_str()),
            self.keepalive
                .map_or("off".to_string(), |k| humantime::format_duration(k.every)
                    .to_string())
        )
    }
}

/// A session imported once and replayed under many settings (as `validate` imports it).
pub use crate::validate::Prepared;

/// Imports the transcript's streams (in start order, as `validate` does).
pub fn prepare(
    t: &Transcript,
    env: &ReplayEnv,
    tokenizer: &Arc<Tokenizer>,
) -> Result<Prepared, AccountError> {
    crate::validate::prepare(t, &ImportOptions::default(), &env.caches, tokenizer)
        .map_err(AccountError::from)
}

/// The outcome of one session under one setting.
#[derive(Debug, Clone, Default)]
pub struct SessionRun {
    /// Every request's figures, in stream order.
    pub requests: Vec<RequestFigures>,
    /// Keep-alive pings sent and what they cost (each re-sends the last request, one output
    /// token).
    pub pings: u64,
    /// The pings' input-side counters.
    pub ping_cost: Counters,
    /// The price of their output tokens in dollars.
    pub ping_output_usd: f64,
}

/// Where the account's leading block (tools and system prompt) stands for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadingBlock {
    /// Not cached when the session starts.
    Cold,
    /// Cached before the first request (an earlier session left it alive).
    Warm,
    /// Cached, and the account's requests keep it refreshed for the whole session.
    KeptWarm,
}

/// The sessions of `p` with keep-alive pings `ka` on their waits (see [`with_keepalive`]), one
/// per stream in `p`'s order. Every setting with the same keep-alive sends the same requests, so
/// a caller builds these once per keep-alive and passes them to [`replay`] for each of them.
pub fn keepalive_sessions(p: &Prepared, ka: Keepalive) -> Result<Vec<Session>, AccountError> {
    p.sessions
        .iter()
        .map(|session| {
            let sc = with_keepalive(&session.scenario, ka);
            Session::new(sc, &session.path, "", session.tokenizer.clone())
                .map_err(AccountError::from)
        })
        .collect()
}

/// Replays every stream of `p` under `setting`, the leading block as the timeline placed it.
/// `pinged`: the streams' sessions with `setting`'s keep-alive ([`keepalive_sessions`]), when it
/// has one; `None` builds them here. The same as [`record`] then [`Recorded::run`].
#[allow(clippy::too_many_arguments)]
pub fn replay(
    p: &Prepared,
    pinged: Option<&[Session]>,
    setting: &Setting,
    strategy: &dyn Strategy,
    cache_name: &str,
    env: &ReplayEnv,
    leading: LeadingBlock,
    break_threshold: f64,
) -> Result<SessionRun, AccountError> {
    let built;
    let pinged = match (setting.keepalive, pinged) {
        (Some(ka), None) => {
            built = keepalive_sessions(p, ka)?;
            Some(built.as_slice())
        }
        (Some(_), pinged) => pinged,
        (None, _) => None,
    };
    record(p, pinged, strategy, env)?.run(
        p,
        setting,
        cache_name,
        env,
        leading,
        break_threshold,
        true,
    )
}

/// What a replayed request stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An assistant step: a recorded request.
    Reply,
    /// A keep-alive ping (priced apart).
    Ping,
    /// A compaction's summarisation request or an unlogged request (an away summary, a
    /// retried attempt): sent and cached, but the recorded usage does not hold it.
    Other,
}

impl Kind {
    fn of(kind: RequestKind) -> Kind {
        match kind {
            RequestKind::Reply => Kind::Reply,
            RequestKind::Keepalive => Kind::Ping,
            RequestKind::Compaction => Kind::Other,
        }
    }
}

/// The requests every stream of a session sends under one strategy and keep-alive, placed on
/// the session's clock: what the cache sees, whatever its TTL. Settings that differ only by TTL
/// replay one recording.
pub struct Recorded {
    /// Every stream's requests at their times, pushed stream by stream (in `Prepared` order).
    schedule: Schedule,
    /// The leading block as the strategy renders it (written first when the timeline says an
    /// earlier session left it).
    leading: Option<Request>,
    /// Per stream: each request's kind and output tokens, in push order.
    streams: Vec<Vec<(Kind, u64)>>,
}

/// Renders every stream of `p` (`pinged`: the sessions with keep-alive pings, when the setting
/// has them) by the engine against a recorder (the requests the strategy sends, no cache), and
/// places them at their recorded times (send, first token, finish), as `validate` does. A
/// keep-alive ping, which the transcript does not hold, keeps the engine's distance from the end
/// of its stream's previous request.
pub fn record(
    p: &Prepared,
    pinged: Option<&[Session]>,
    strategy: &dyn Strategy,
    env: &ReplayEnv,
) -> Result<Recorded, AccountError> {
    let mut schedule = Schedule::new();
    let mut streams = Vec::with_capacity(p.imported.len());
    for (k, (imp, session)) in p.imported.iter().zip(&p.sessions).enumerate() {
        let session = pinged.map_or(session, |pinged| &pinged[k]);
        let mut rec = Recorder {
            stream: stream_name(imp),
            sent: Vec::new(),
        };
        let replay = engine::replay(session, strategy, &mut rec, env)?;
        // A request's `index` is the number of rows before it; an unlogged request (sent and
        // cached, no row) shares it with the request after it. So a request has a row when no
        // later one has its index and that row exists.
        let index: Vec<usize> = rec.sent.iter().map(|(r, _, _)| r.index).collect();
        let kinds: Vec<Kind> = (0..index.len())
            .map(|j| {
                let i = index[j];
                let last = index.get(j + 1).is_none_or(|&n| n != i);
                match replay.rows.get(i) {
                    Some(row) if last => Kind::of(row.kind),
                    _ => Kind::Other,
                }
            })
            .collect();
        let mut timeline = imp.timeline.iter().peekable();
        // Recorded minus replayed finish of the stream's latest request.
        let mut shift: i128 = 0;
        let mut placed = Vec::with_capacity(rec.sent.len());
        for (kind, (mut request, visible, finished)) in kinds.into_iter().zip(rec.sent) {
            let at = match (kind, timeline.next_if(|_| kind != Kind::Ping)) {
                (_, Some(&at)) => {
                    shift = i128::from(at.finished_ms) - i128::from(finished);
                    at
                }
                (_, None) => {
                    let move_by = |t: u64| (i128::from(t) + shift).clamp(0, u64::MAX.into()) as u64;
                    SendTime {
                        sent_ms: move_by(request.sent_at_ms),
                        visible_ms: move_by(visible),
                        finished_ms: move_by(finished),
                    }
                }
            };
            request.sent_at_ms = at.sent_ms;
            placed.push((kind, request.output_tokens));
            schedule.push(Timed {
                stream: k,
                request,
                sent_ms: at.sent_ms,
                visible_ms: at.visible_ms,
                finished_ms: at.finished_ms,
            });
        }
        streams.push(placed);
    }
    let leading = p.sessions.first().map(|s| leading_block(s, strategy));
    Ok(Recorded {
        schedule,
        leading,
        streams,
    })
}

impl Recorded {
    /// Whether `other` sends the cache exactly what this recording sends (every field of every
    /// request, its times and kind, and the leading block): then any cache gives both the same
    /// outcomes, and a caller replays one of them (strategies that render an imported session
    /// alike, such as `permission-mode` and `masked` on a session without plan mode).
    pub fn same_as(&self, other: &Recorded) -> bool {
        let (a, b) = (self.schedule.entries(), other.schedule.entries());
        self.streams == other.streams
            && a.len() == b.len()
            && a.iter().zip(b).all(|(a, b)| {
                (a.stream, a.sent_ms, a.visible_ms, a.finished_ms)
                    == (b.stream, b.sent_ms, b.visible_ms, b.finished_ms)
                    && same_request(&a.request, &b.request)
            })
            && match (&self.leading, &other.leading) {
                (Some(a), Some(b)) => same_request(a, b),
                (None, None) => true,
                _ => false,
            }
    }

    /// Replays the recording on one cache instance of `setting`'s TTL (the keep-alive is the
    /// recording's), in send order across streams ([`Schedule`]), so parallel agents read what
    /// the others wrote; the leading block first when the timeline placed it.
    /// `detail`: the per-request labels (stream, model, break reason) too; the what-if rows
    /// only add the figures up.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        p: &Prepared,
        setting: &Setting,
        cache_name: &str,
        env: &ReplayEnv,
        leading: LeadingBlock,
        break_threshold: f64,
        detail: bool,
    ) -> Result<SessionRun, AccountError> {
        let mut config = p.config.clone();
        config.anthropic.prefix_kept_warm = leading == LeadingBlock::KeptWarm;
        // A what-if TTL is every stream's class: the streams listed with the class their
        // harness wrote (each stream writes only its own) are set to it too.
        if let Some(ttl) = setting.ttl {
            let a = &mut config.anthropic;
            a.message_ttl = ttl;
            a.system_ttl = ttl;
            a.subagent_message_ttl = Some(ttl);
            a.stream_ttls.values_mut().for_each(|t| *t = ttl);
        }
        let mut cache = cache::build_with(cache_name, &env.prices, &config)?;
        self.schedule.clear_prewarm();
        if let (LeadingBlock::Warm | LeadingBlock::KeptWarm, Some(req)) = (leading, &self.leading) {
            self.schedule.prewarm(0, req.clone());
        }
        let outcomes = self.schedule.run_ref(cache.as_mut());
        let mut out = SessionRun::default();
        let mut next = outcomes.iter();
        for ((imp, stream), session) in p.imported.iter().zip(&self.streams).zip(&p.sessions) {
            let model = &imp.scenario.model;
            let out_price = env.prices.get(model).map_or(0.0, |m| m.output) / 1e6;
            let mut answers = Vec::with_capacity(stream.len());
            let mut previous_prompt: Option<u64> = None;
            for (n, &(kind, output_tokens)) in stream.iter().enumerate() {
                let o = next.next().ok_or(AccountError::LostRequest)?;
                if let Some(why) = &o.rejected {
                    return Err(ScenarioError::new(
                        &session.path,
                        Some(format!("stream `{}`, request {}", imp.stream, n + 1)),
                        why,
                    )
                    .into());
                }
                // A break as the engine tells it: fewer tokens read than the stream's previous
                // prompt (pings and compaction requests included), with the cache's reason.
                let broke = previous_prompt.is_some_and(|prev| o.cached_tokens < prev);
                previous_prompt = Some(o.prompt_tokens);
                match kind {
                    Kind::Reply => answers.push(Answer { outcome: o, broke }),
                    Kind::Ping => {
                        out.pings += 1;
                        out.ping_cost
                            .add(&Counters::of_outcome(&env.prices, model, o));
                        out.ping_output_usd += output_tokens as f64 * out_price;
                    }
                    Kind::Other => {}
                }
            }
            out.requests.extend(figures(
                imp,
                &answers,
                &env.prices,
                break_threshold,
                p.origin_ms,
                detail,
            ));
        }
        Ok(out)
    }
}

/// The scenario with keep-alive pings every `ka.every` on each wait; a wait longer than
/// `ka.limit` is split into `limit` with pings and the rest without.
pub fn with_keepalive(sc: &Scenario, ka: Keepalive) -> Scenario {
    let mut sc = sc.clone();
    let mut steps = Vec::with_capacity(sc.steps.len());
    for step in sc.steps.drain(..) {
        match step {
            Step::Wait(WaitDuration(d, _)) if d > ka.limit => {
                steps.push(Step::Wait(WaitDuration(ka.limit, Some(ka.every))));
                steps.push(Step::Wait(WaitDuration(d - ka.limit, None)));
            }
            Step::Wait(WaitDuration(d, _)) => {
                steps.push(Step::Wait(WaitDuration(d, Some(ka.every))))
            }
            other => steps.push(other),
        }
    }
    sc.steps = steps;
    sc
}

/// Two requests equal in every field the cache sees (segments by content, label and TTL mark).
fn same_request(a: &Request, b: &Request) -> bool {
    a.index == b.index
        && a.stream == b.stream
        && a.step == b.step
        && a.model == b.model
        && a.sent_at_ms == b.sent_at_ms
        && a.settings == b.settings
        && a.output_tokens == b.output_tokens
        && same_segments(&a.segments, &b.segments)
        && same_segments(&a.reply, &b.reply)
}

fn same_segments(a: &[Arc<Segment>], b: &[Arc<Segment>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            Arc::ptr_eq(x, y)
                || (x.id == y.id
                    && x.level == y.level
                    && x.kind == y.kind
                    && x.breakpoint == y.breakpoint
                    && x.label == y.label
                    && (Arc::ptr_eq(&x.tokens, &y.tokens) || x.tokens == y.tokens))
        })
}

/// What the shared cache gave one reply, and whether it read less than the stream's previous
/// prompt.
struct Answer<'a> {
    outcome: &'a CacheOutcome,
    broke: bool,
}

/// The engine names every replayed scenario's stream `main`; on the session's cache each
/// stream keeps its own name (subagent streams get the subagent TTL and their own state), as in
/// `validate`.
fn stream_name(imp: &ImportedScenario) -> String {
    match imp.kind {
        StreamKind::Main => "main".to_string(),
        StreamKind::Agent => imp.stream.clone(),
    }
}

/// Collects a stream's requests as the engine sends them, with the times it gives their first
/// token and finish, without caching (the schedule replays them on the session's cache).
struct Recorder {
    stream: String,
    /// (request, first token, finish) per request sent.
    sent: Vec<(Request, u64, u64)>,
}

impl CacheModel for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let mut r = req.clone();
        r.stream.clone_from(&self.stream);
        self.sent.push((r, req.sent_at_ms, req.sent_at_ms));
        CacheOutcome::default()
    }
    fn store(&mut self, _: &Request, _: &CacheOutcome, visible_at: u64, completed_at: u64) {
        if let Some(last) = self.sent.last_mut() {
            last.1 = visible_at;
            last.2 = completed_at;
        }
    }
}

/// Billed beside predicted, request by request (the billed side only from the usage records).
fn figures(
    imp: &ImportedScenario,
    answers: &[Answer<'_>],
    prices: &PriceTable,
    break_threshold: f64,
    origin_ms: u64,
    detail: bool,
) -> Vec<RequestFigures> {
    let model = &imp.scenario.model;
    let out_price = prices.get(model).map_or(0.0, |m| m.output) / 1_000_000.0;
    let mut out: Vec<RequestFigures> = Vec::with_capacity(answers.len());
    for (i, (rec, a)) in imp.requests.iter().zip(answers).enumerate() {
        let u = &rec.usage;
        let (c5, c1) = u.creation_split();
        let billed = Counters::priced(
            prices,
            model,
            u.prompt_tokens(),
            u.input_tokens,
            c5,
            c1,
            u.cache_read_input_tokens,
        );
        let o = a.outcome;
        let predicted = Counters::of_outcome(prices, model, o);
        let prev = out.last();
        let billed_break =
            prev.is_some_and(|p| (billed.read as f64) < break_threshold * p.billed.prompt as f64);
        let predicted_break = prev
            .is_some_and(|p| (predicted.read as f64) < break_threshold * p.predicted.prompt as f64);
        let label = |s: &dyn Fn() -> String| if detail { s() } else { String::new() };
        out.push(RequestFigures {
            stream: label(&|| imp.stream.clone()),
            request: i + 1,
            sent_at_ms: origin_ms + rec.sent_at_ms,
            model: label(&|| crate::import::scenario::model_family(&rec.model)),
            first_in_stream: i == 0,
            billed,
            predicted,
            output_tokens: u.output_tokens,
            output_usd: u.output_tokens as f64 * out_price,
            billed_break,
            predicted_break,
            reason: match (&o.stop, a.broke && detail) {
                (Some(stop), true) => stop.to_string(),
                _ => String::new(),
            },
        });
    }
    out
}
