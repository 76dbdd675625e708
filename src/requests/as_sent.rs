//! The log as sent, as a design row of `plancache run` and `report`: the reference that every
//! strategy, `--ttl` and `--keepalive` variant of the imported scenario is priced against.
//!
//! `as-sent` re-renders nothing. Its requests are the log's own, block for block, with the
//! harness's own `cache_control` marks and TTLs, at the log's own times (what `explain`
//! replays). Under an `anthropic*` cache model of the run the replay uses the marks the bodies
//! state (`anthropic-explicit` with its default parameters): the three `anthropic*` models
//! differ only in where the client puts its marks, and placing marks is rendering. Under a
//! cache model without marks (`openai`, `ideal`, the engines) the same requests go through
//! that model with the run's parameters. Each row is priced as the engine prices a replay's
//! requests; a request's output is the reply the imported scenario gives it (the assistant
//! blocks the next request carries), so the output costs the same as under every strategy and
//! the saving is the cache's alone. A server's own compaction passes are left out, as the
//! scenario leaves them out, and so are the few tokens of turn framing after the last block
//! (the trailer `build` fits to the bill): they are the same under every design and the
//! scenario has no block for them, so every row of a run prices the same prompt. A stream
//! that was warm before the log began (its first request read from the cache) is replayed
//! cold, as its scenario is: every design starts from the same empty cache.
//!
//! The strategies' replays of the imported scenario still go through the reference state
//! machine and the cross-strategy check; `as-sent` has no decisions of its own (a log has no
//! plan-mode transitions to check), so its trace is empty.

use super::build::{BuiltLog, TRAILER};
use super::explain::replay_on;
use super::scenario::StreamScenario;
use crate::cache::{self, CacheConfig, CacheOutcome};
use crate::engine::{Replay, ReplayEnv};
use crate::metrics::RequestRow;
use crate::plan_mode::{Mode, Trace};
use crate::scenario::Step;

/// The design's name in the `strategy` column and for `--reference`.
pub const AS_SENT: &str = "as-sent";

/// The cache model the as-sent replay uses when the run asks for `run_cache`.
pub fn cache_for(run_cache: &str) -> &str {
    if run_cache.starts_with("anthropic") {
        "anthropic-explicit"
    } else {
        run_cache
    }
}

/// The log without the trailer segment of each request (it follows the last block, so no
/// mark covers it: reads and writes are the same without it), every stream starting cold.
fn without_trailers(log: &BuiltLog) -> BuiltLog {
    let mut out = log.clone();
    for r in &mut out.requests {
        r.request.segments.retain(|s| s.label != TRAILER);
        r.warm_start = false;
    }
    out
}

/// Output tokens of each assistant step of the scenario, with the step's 1-based number.
fn replies(s: &StreamScenario) -> Vec<(usize, u64)> {
    s.scenario
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, st)| match st {
            Step::Assistant(t) => Some((i + 1, u64::from(t.tokens.unwrap_or(1)))),
            _ => None,
        })
        .collect()
}

/// Why a log could not be replayed as sent.
#[derive(Debug, thiserror::Error)]
pub enum AsSentError {
    /// The cache model cannot be built.
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
    /// A request on a model the price table does not list: the log, the request's place, why.
    #[error(transparent)]
    Unpriced(Box<crate::util::ScenarioError>),
}

/// The as-sent replays of every stream scenario of `log`, one per cache model of the run.
pub fn replays(
    log: &BuiltLog,
    streams: &[StreamScenario],
    caches: &[String],
    env: &ReplayEnv,
) -> Result<Vec<Replay>, AsSentError> {
    let mut prices = env.prices.clone();
    prices.pin(log.requests.iter().map(|r| r.request.model.as_str()));
    let log = without_trailers(log);
    let log = &log;
    let mut out = Vec::new();
    for run_cache in caches {
        let name = cache_for(run_cache);
        let config = if name == run_cache && !name.starts_with("anthropic") {
            env.caches.clone()
        } else {
            CacheConfig::default()
        };
        let mut c = cache::build_with(name, &prices, &config)?;
        let outcomes = replay_on(log, c.as_mut());
        for s in streams {
            out.push(replay(
                log,
                s,
                run_cache,
                &outcomes,
                env,
                &prices,
                c.charges_writes(),
            )?);
        }
    }
    Ok(out)
}

/// One stream's rows: the requests with a body, in send order, each priced.
fn replay(
    log: &BuiltLog,
    s: &StreamScenario,
    run_cache: &str,
    outcomes: &[CacheOutcome],
    env: &ReplayEnv,
    prices: &crate::cache::PriceTable,
    charges_writes: bool,
) -> Result<Replay, AsSentError> {
    let mut rows: Vec<RequestRow> = Vec::new();
    let replies = replies(s);
    let mut previous_prompt: Option<u64> = None;
    let sent = log
        .requests
        .iter()
        .zip(outcomes)
        .filter(|(r, _)| r.request.stream == s.stream && r.body.is_some());
    for ((r, o), &(step, output)) in sent.zip(&replies) {
        let model = prices.get(&r.request.model).ok_or_else(|| {
            AsSentError::Unpriced(Box::new(crate::util::ScenarioError::new(
                &log.file,
                Some(r.place.clone()),
                prices.unknown_model(&r.request.model),
            )))
        })?;
        let broke = previous_prompt.is_some_and(|p| o.cached_tokens < p);
        previous_prompt = Some(o.prompt_tokens);
        rows.push(RequestRow {
            scenario: s.scenario.name.as_str().into(),
            strategy: AS_SENT.into(),
            cache: run_cache.into(),
            request: rows.len() + 1,
            step,
            mode: Mode::default(),
            model: r.request.model.as_str().into(),
            prompt_tokens: o.prompt_tokens,
            cached_tokens: o.cached_tokens,
            cache_write_tokens: o.cache_write_tokens(),
            recomputed_tokens: o.recomputed_tokens(),
            output_tokens: output,
            hit_rate: o.hit_rate(),
            cost_usd: model.cost_billed(o, output, charges_writes),
            ttft_ms: env.latency_for(&model.provider).ttft_ms(o),
            break_reason: o.stop.clone().filter(|_| broke),
            stream: r.request.stream.as_str().into(),
            sent_at_ms: r.request.sent_at_ms,
            input_tokens: o.uncached_input_tokens,
            cache_creation_input_tokens: o.cache_write_tokens(),
            cache_creation_5m_tokens: o.write_5m_tokens,
            cache_creation_1h_tokens: o.write_1h_tokens,
            cache_read_input_tokens: o.cached_tokens,
            kind: crate::metrics::RequestKind::Reply,
        });
    }
    Ok(Replay {
        scenario: s.scenario.name.clone(),
        strategy: AS_SENT.to_string(),
        cache: run_cache.to_string(),
        rows,
        trace: Trace::default(),
        unrendered_calls: Vec::new(),
        notes: vec![format!(
            "{}: the requests as the log has them ({} replayed)",
            log.file.display(),
            cache_for(run_cache)
        )],
    })
}
