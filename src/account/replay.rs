//! Replaying one session of the account under one setting (strategy, TTL, keep-alive), the way
//! `validate` replays a transcript: every stream in start order against one cache instance with
//! the harness's breakpoint layout and TTLs, plus the account's leading block when the timeline
//! says it is alive.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::figures::{Counters, RequestFigures};
use crate::cache::{self, CacheConfig, CacheModel, PriceTable};
use crate::engine::{self, ReplayEnv};
use crate::import::{build_scenarios, ImportOptions, ImportedScenario, Transcript};
use crate::metrics::RequestRow;
use crate::prompt::{Request, RequestSettings, Tokenizer, Ttl};
use crate::scenario::{Scenario, Session, Step, WaitDuration};
use crate::strategy::Strategy;

/// Pings that hold the cache warm while the human is away: every `every`, re-send the last
/// prompt with `max_tokens = 1`, for at most `limit` of each idle gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub every: Duration,
    pub limit: Duration,
}

impl Keepalive {
    /// Pings during an idle gap of `gap`: one at every multiple of `every` that falls strictly
    /// inside the gap and within the limit.
    pub fn pings(&self, gap: Duration) -> u64 {
        let every = self.every.as_millis().max(1);
        let span = gap.min(self.limit + Duration::from_millis(1)).as_millis();
        (span.saturating_sub(1) / every) as u64
    }
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

/// A session imported once and replayed under many settings.
pub struct Prepared {
    pub imported: Vec<ImportedScenario>,
    pub sessions: Vec<Session>,
    /// The cache parameters the harness ran with (TTLs from the transcript).
    pub config: CacheConfig,
    /// Epoch ms of the transcript's earliest record: the imported send times count from it.
    pub origin_ms: u64,
}

/// Imports the transcript's streams (in start order, as `validate` does).
pub fn prepare(
    t: &Transcript,
    env: &ReplayEnv,
    tokenizer: &Arc<Tokenizer>,
) -> Result<Prepared, String> {
    let mut imported = build_scenarios(t, &ImportOptions::default());
    imported.sort_by_key(|s| s.requests.first().map_or(u64::MAX, |r| r.sent_at_ms));
    let config = crate::validate::harness_config(&env.caches, t, &imported);
    let sessions = imported
        .iter()
        .map(|imp| {
            let text = imp.to_toml(&t.source)?;
            let label = format!("{}#{}", t.source, imp.stream);
            Session::new(
                imp.scenario.clone(),
                Path::new(&label),
                &text,
                tokenizer.clone(),
            )
            .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
    let origin_ms = t
        .streams
        .iter()
        .flat_map(|s| s.items.iter().map(crate::import::Item::at_ms))
        .min()
        .unwrap_or(0);
    Ok(Prepared {
        origin_ms,
        imported,
        sessions,
        config,
    })
}

/// The outcome of one session under one setting.
#[derive(Debug, Clone, Default)]
pub struct SessionRun {
    pub requests: Vec<RequestFigures>,
    /// Keep-alive pings sent and what they cost (reads of the last prompt + one output token).
    pub pings: u64,
    pub ping_cost: Counters,
    pub ping_output_usd: f64,
}

/// Replays every stream of `p` under `setting`. `warm`: the account's leading block (tools and
/// system prompt) is in the cache before the first request; `kept_warm`: other sessions keep it
/// refreshed for the whole session.
pub fn replay(
    p: &Prepared,
    setting: &Setting,
    strategy: &dyn Strategy,
    cache_name: &str,
    env: &ReplayEnv,
    warm: bool,
    kept_warm: bool,
    break_threshold: f64,
) -> Result<SessionRun, String> {
    let mut config = p.config.clone();
    config.anthropic.prefix_kept_warm = kept_warm;
    if let Some(ttl) = setting.ttl {
        config.anthropic.message_ttl = ttl;
        config.anthropic.system_ttl = ttl;
    }
    let mut cache = cache::build_with(cache_name, &env.prices, &config)?;
    let mut out = SessionRun::default();
    for (k, (imp, session)) in p.imported.iter().zip(&p.sessions).enumerate() {
        if k == 0 && warm {
            prewarm(session, strategy, cache.as_mut());
        }
        let (rows, pings) = match setting.keepalive {
            None => (run(session, strategy, cache.as_mut(), env)?, Vec::new()),
            Some(ka) => {
                let (sc, pings) = with_keepalive(&session.scenario, ka);
                let s = Session::new(sc, &session.path, "", session.tokenizer.clone())
                    .map_err(|e| e.to_string())?;
                (run(&s, strategy, cache.as_mut(), env)?, pings)
            }
        };
        for (step, n) in pings {
            // The last request before the wait: its prompt is what each ping re-reads.
            if let Some(row) = rows.iter().rev().find(|r| r.step <= step) {
                let model = &imp.scenario.model;
                let one = Counters::priced(
                    &env.prices,
                    model,
                    row.prompt_tokens,
                    0,
                    0,
                    0,
                    row.prompt_tokens,
                );
                for _ in 0..n {
                    out.ping_cost.add(&one);
                }
                out.pings += n;
                out.ping_output_usd +=
                    n as f64 * env.prices.get(model).map_or(0.0, |m| m.output) / 1_000_000.0;
            }
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

/// The scenario with every idle wait after the first request shortened by the pings sent
/// during it (the cache entry is refreshed by the last ping, so what the cache sees is the time
/// since that ping), and per wait step (1-based) the number of pings.
pub fn with_keepalive(sc: &Scenario, ka: Keepalive) -> (Scenario, Vec<(usize, u64)>) {
    let mut sc = sc.clone();
    let mut pings = Vec::new();
    let mut asked = false;
    for (i, step) in sc.steps.iter_mut().enumerate() {
        match step {
            Step::Assistant(_) => asked = true,
            Step::Wait(WaitDuration(d)) if asked => {
                let n = ka.pings(*d);
                if n > 0 {
                    *d = d.saturating_sub(ka.every * n as u32);
                    pings.push((i + 1, n));
                }
            }
            _ => {}
        }
    }
    (sc, pings)
}

/// Writes the leading block an earlier session of the account left in the cache: the tools and
/// every system block the strategy renders in the session's initial mode.
fn prewarm(session: &Session, strategy: &dyn Strategy, cache: &mut dyn CacheModel) {
    let mode = session.scenario.initial_mode;
    let mut segments = strategy.tools(session, &session.tools, mode);
    segments.extend(strategy.system(session, mode));
    let req = Request {
        index: 0,
        stream: "earlier-session".into(),
        step: 0,
        model: strategy.model(session, mode),
        sent_at_ms: 0,
        segments,
        settings: RequestSettings::default(),
        reply: Vec::new(),
        output_tokens: 0,
    };
    let outcome = cache.lookup(&req);
    cache.store(&req, &outcome, 0, 0);
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
            reason: row.break_reason.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pings_fall_strictly_inside_the_gap_and_within_the_limit() {
        let ka = Keepalive {
            every: Duration::from_secs(270),
            limit: Duration::from_secs(3600),
        };
        // 4m30s pings: a 4 min gap needs none; a 9 min gap gets one at 4:30 (the second would
        // coincide with the request at 9:00); 9:01 gets two.
        assert_eq!(ka.pings(Duration::from_secs(240)), 0);
        assert_eq!(ka.pings(Duration::from_secs(540)), 1);
        assert_eq!(ka.pings(Duration::from_secs(541)), 2);
        // A 3 h gap: pings only during the first hour, at 4:30, 9:00, ..., 58:30 and 63:00 is
        // past the hour: floor(3600 / 270) = 13 pings.
        assert_eq!(ka.pings(Duration::from_secs(3 * 3600)), 13);
    }
}
