//! Pricing one request: cache lookup and store, TTFT, cost, and the break explanation.

use super::names::RowNames;
use super::stream::{advance, Stream};
use super::{Replay, ReplayEnv, ReplayError};
use crate::cache::{CacheModel, CacheOutcome, ModelPrice};
use crate::metrics::{RequestKind, RequestRow};
use crate::plan_mode::Mode;
use crate::prompt::Request;
use crate::scenario::Session;

/// Largest cost one request may have: far above any real request (a million tokens at a
/// thousand dollars per million is $1,000), low enough that sums over any session stay finite
/// (charts and summaries add them up).
const MAX_REQUEST_COST_USD: f64 = 1e12;

/// Where a request sits, for its errors: `file: step 7 (line 42) (request 3, anthropic)`.
struct Place<'a> {
    /// The request being priced.
    request: &'a Request,
    /// The session that sent it (its file and step lines).
    session: &'a Session,
    /// 1-based request number in the replay.
    number: usize,
    /// The cache model's registry name.
    cache: &'a str,
}

impl Place<'_> {
    fn text(&self) -> String {
        format!(
            "{}: {} (request {}, {})",
            self.session.path.display(),
            self.session.step_place(self.request.step),
            self.number,
            self.cache
        )
    }

    fn err(&self, message: String, hint: &str) -> ReplayError {
        ReplayError {
            place: self.text(),
            message,
            hint: hint.to_string(),
        }
    }
}

/// Prices one request against the cache and advances the stream's clock past the reply; the
/// row is of kind `reply` (the sender tags it).
pub(super) fn price(
    request: &Request,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
    stream: &mut Stream,
    mode: Mode,
    (out, names): (&Replay, &mut RowNames),
    session: &Session,
) -> Result<RequestRow, ReplayError> {
    let model = model_price(request, env, session)?;
    let outcome: CacheOutcome = cache.lookup(request);
    let place = Place {
        request,
        session,
        number: out.rows.len() + 1,
        cache: &out.cache,
    };
    if let Some(why) = &outcome.rejected {
        return Err(place.err(why.clone(), "place at most 4 `cache_control` marks on the blocks of one request, longer TTLs first; the harness must move or drop older marks"));
    }
    let ttft = env.latency_for(&model.provider).ttft_ms(&outcome);
    let (visible_at, completed_at) = times(request, ttft, session, &place)?;
    let cost_usd = model.cost_billed(&outcome, request.output_tokens, cache.charges_writes());
    if !(0.0..=MAX_REQUEST_COST_USD).contains(&cost_usd) {
        return Err(place.err(
            format!(
                "the request's cost is {cost_usd} dollars: the prices of model `{}` are out of range",
                request.model
            ),
            "check the prices (dollars per million tokens) in the --pricing file for extra digits",
        ));
    }
    cache.store(request, &outcome, visible_at, completed_at);
    stream.clock_ms = completed_at;
    let broke = stream
        .previous_prompt
        .is_some_and(|prev| outcome.cached_tokens < prev);
    stream.previous_prompt = Some(outcome.prompt_tokens);
    let number = out.rows.len() + 1;
    Ok(row(
        request,
        &outcome,
        (number, names),
        mode,
        cost_usd,
        ttft,
        broke,
    ))
}

/// The price-table entry of the request's model.
fn model_price<'e>(
    request: &Request,
    env: &'e ReplayEnv,
    session: &Session,
) -> Result<&'e ModelPrice, ReplayError> {
    env.prices.get(&request.model).ok_or_else(|| ReplayError {
        place: session.path.display().to_string(),
        message: env.prices.unknown_model(&request.model),
        hint: format!(
            "use one of: {}; or add it with --pricing FILE (docs/pricing.md)",
            env.prices.names().collect::<Vec<_>>().join(", ")
        ),
    })
}

/// When the reply begins (the request's entries become readable) and completes.
fn times(
    request: &Request,
    ttft: f64,
    session: &Session,
    place: &Place<'_>,
) -> Result<(u64, u64), ReplayError> {
    let decode = session.scenario.timing.decode_tokens_per_s.max(1e-3);
    let decode_ms = request.output_tokens as f64 * 1000.0 / decode;
    // The place names an error only: built when one occurs, not per request.
    let later = |clock: u64, ms: u64| match clock.checked_add(ms) {
        Some(t) => Ok(t),
        None => advance(clock, ms, || place.text()),
    };
    let visible_at = later(
        request.sent_at_ms,
        whole_ms(ttft, "time to first token", place)?,
    )?;
    let completed_at = later(
        visible_at,
        whole_ms(decode_ms, "output generation time", place)?,
    )?;
    Ok((visible_at, completed_at))
}

/// The row of a priced request; `broke`: it reused less than its stream's previous prompt.
fn row(
    request: &Request,
    outcome: &CacheOutcome,
    (number, names): (usize, &mut RowNames),
    mode: Mode,
    cost_usd: f64,
    ttft_ms: f64,
    broke: bool,
) -> RequestRow {
    RequestRow {
        scenario: names.scenario.clone(),
        strategy: names.strategy.clone(),
        cache: names.cache.clone(),
        request: number,
        step: request.step + 1,
        mode,
        model: names.shared(&request.model),
        prompt_tokens: outcome.prompt_tokens,
        cached_tokens: outcome.cached_tokens,
        cache_write_tokens: outcome.cache_write_tokens(),
        recomputed_tokens: outcome.recomputed_tokens(),
        output_tokens: request.output_tokens,
        hit_rate: outcome.hit_rate(),
        cost_usd,
        ttft_ms,
        break_reason: outcome.stop.clone().filter(|_| broke),
        stream: names.shared(&request.stream),
        sent_at_ms: request.sent_at_ms,
        input_tokens: outcome.uncached_input_tokens,
        cache_creation_input_tokens: outcome.cache_write_tokens(),
        cache_creation_5m_tokens: outcome.write_5m_tokens,
        cache_creation_1h_tokens: outcome.write_1h_tokens,
        cache_read_input_tokens: outcome.cached_tokens,
        kind: RequestKind::Reply,
    }
}

/// A duration in whole milliseconds from a model's float; a value that is not a finite,
/// non-negative number of milliseconds within `u64` is bad input (a latency or decode rate out of
/// range), named at `place`.
fn whole_ms(ms: f64, what: &str, place: &Place<'_>) -> Result<u64, ReplayError> {
    let rounded = ms.round();
    // 2^64 is exactly representable; anything at or above it does not fit (NaN is in no range).
    if (0.0..18_446_744_073_709_551_616.0).contains(&rounded) {
        Ok(rounded as u64)
    } else {
        Err(place.err(
            format!("the {what} is {ms} ms, which no clock can hold"),
            "check the latency parameters and `timing.decode_tokens_per_s` for values out of range",
        ))
    }
}
