//! Replaying one session of the account under one setting (strategy, TTL, keep-alive), the way
//! `validate` replays a transcript: every stream in start order against one cache instance with
//! the harness's breakpoint layout and TTLs, plus the account's leading block when the timeline
//! says it is alive.

use std::sync::Arc;
use std::time::Duration;

use super::figures::{Counters, RequestFigures};
use crate::cache::{self, CacheModel, PriceTable};
use crate::engine::schedule::leading_block;
use crate::engine::{self, ReplayEnv};
use crate::import::{ImportOptions, ImportedScenario, Transcript};
use crate::metrics::RequestRow;
use crate::prompt::{Tokenizer, Ttl};
use crate::scenario::{Scenario, Session, Step, WaitDuration};
use crate::strategy::Strategy;

/// Pings that hold the cache warm while the human is away: every `every`, the harness re-sends
/// the stream's last request with `max_tokens = 1` (the engine's `keepalive` on waits), during
/// at most `limit` of each idle gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub every: Duration,
    pub limit: Duration,
}

/// One way of running the account's sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub strategy: String,
    /// `None`: the TTLs the transcripts wrote.
    pub ttl: Option<Ttl>,
    pub keepalive: Option<Keepalive>,
}

impl Setting {
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
) -> Result<Prepared, String> {
    crate::validate::prepare(t, &ImportOptions::default(), &env.caches, tokenizer)
}

/// The outcome of one session under one setting.
#[derive(Debug, Clone, Default)]
pub struct SessionRun {
    pub requests: Vec<RequestFigures>,
    /// Keep-alive pings sent and what they cost (each re-sends the last request, one output
    /// token).
    pub pings: u64,
    pub ping_cost: Counters,
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
pub fn keepalive_sessions(p: &Prepared, ka: Keepalive) -> Result<Vec<Session>, String> {
    p.sessions
        .iter()
        .map(|session| {
            let sc = with_keepalive(&session.scenario, ka);
            Session::new(sc, &session.path, "", session.tokenizer.clone())
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Replays every stream of `p` under `setting`, the leading block as the timeline placed it.
/// `pinged`: the streams' sessions with `setting`'s keep-alive ([`keepalive_sessions`]), when it
/// has one; `None` builds them here.
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
) -> Result<SessionRun, String> {
    let built;
    let pinged = match (setting.keepalive, pinged) {
        (Some(ka), None) => {
            built = keepalive_sessions(p, ka)?;
            Some(built.as_slice())
        }
        (_, pinged) => pinged,
    };
    let mut config = p.config.clone();
    config.anthropic.prefix_kept_warm = leading == LeadingBlock::KeptWarm;
    if let Some(ttl) = setting.ttl {
        config.anthropic.message_ttl = ttl;
        config.anthropic.system_ttl = ttl;
    }
    let mut cache = cache::build_with(cache_name, &env.prices, &config)?;
    let mut out = SessionRun::default();
    for (k, (imp, session)) in p.imported.iter().zip(&p.sessions).enumerate() {
        if k == 0 && leading != LeadingBlock::Cold {
            let req = leading_block(session, strategy);
            let outcome = cache.lookup(&req);
            cache.store(&req, &outcome, 0, 0);
        }
        let rows = match (setting.keepalive, pinged) {
            (Some(_), Some(pinged)) => run(&pinged[k], strategy, cache.as_mut(), env)?,
            _ => run(session, strategy, cache.as_mut(), env)?,
        };
        // Keep-alive pings are priced apart; the assistant steps pair up with the recorded
        // requests. A compaction's summarisation request (imported scenarios send it, unlogged)
        // is neither: the recorded usage does not hold it either.
        let (rows, extra): (Vec<RequestRow>, Vec<RequestRow>) =
            rows.into_iter().partition(RequestRow::is_reply);
        let extra: Vec<RequestRow> = extra
            .into_iter()
            .filter(|r| r.kind == crate::metrics::RequestKind::Keepalive)
            .collect();
        let out_price = env
            .prices
            .get(&imp.scenario.model)
            .map_or(0.0, |m| m.output)
            / 1e6;
        for row in &extra {
            out.pings += 1;
            out.ping_cost.add(&Counters::priced(
                &env.prices,
                &imp.scenario.model,
                row.prompt_tokens,
                row.input_tokens,
                row.cache_creation_5m_tokens,
                row.cache_creation_1h_tokens,
                row.cache_read_input_tokens,
            ));
            out.ping_output_usd += row.output_tokens as f64 * out_price;
        }
        out.requests.extend(figures(
            imp,
            &rows,
            &env.prices,
            break_threshold,
            p.origin_ms,
        ));
    }
    Ok(out)
}

fn run(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
) -> Result<Vec<RequestRow>, String> {
    engine::replay(session, strategy, cache, env)
        .map(|r| r.rows)
        .map_err(|e| e.to_string())
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

/// Billed beside predicted, request by request (the billed side only from the usage records).
fn figures(
    imp: &ImportedScenario,
    rows: &[RequestRow],
    prices: &PriceTable,
    break_threshold: f64,
    origin_ms: u64,
) -> Vec<RequestFigures> {
    let model = &imp.scenario.model;
    let out_price = prices.get(model).map_or(0.0, |m| m.output) / 1_000_000.0;
    let mut out: Vec<RequestFigures> = Vec::with_capacity(rows.len());
    for (i, (rec, row)) in imp.requests.iter().zip(rows).enumerate() {
        let u = &rec.usage;
        let (c5, c1) = match (u.creation_5m, u.creation_1h) {
            (Some(a), Some(b)) => (a, b),
            (Some(a), None) => (a, 0),
            (None, Some(b)) => (0, b),
            (None, None) => (u.cache_creation_input_tokens, 0),
        };
        let billed = Counters::priced(
            prices,
            model,
            u.prompt_tokens(),
            u.input_tokens,
            c5,
            c1,
            u.cache_read_input_tokens,
        );
        let predicted = Counters::priced(
            prices,
            model,
            row.prompt_tokens,
            row.input_tokens,
            row.cache_creation_5m_tokens,
            row.cache_creation_1h_tokens,
            row.cache_read_input_tokens,
        );
        let prev = out.last();
        let billed_break =
            prev.is_some_and(|p| (billed.read as f64) < break_threshold * p.billed.prompt as f64);
        let predicted_break = prev
            .is_some_and(|p| (predicted.read as f64) < break_threshold * p.predicted.prompt as f64);
        out.push(RequestFigures {
            stream: imp.stream.clone(),
            request: i + 1,
            sent_at_ms: origin_ms + rec.sent_at_ms,
            model: crate::import::scenario::model_family(&rec.model),
            first_in_stream: i == 0,
            billed,
            predicted,
            output_tokens: u.output_tokens,
            output_usd: u.output_tokens as f64 * out_price,
            billed_break,
            predicted_break,
            reason: row.break_text(),
        });
    }
    out
}
