//! Pricing one request: cache lookup and store, TTFT, cost, and the break explanation.

use super::stream::Stream;
use super::{Replay, ReplayEnv, ReplayError};
use crate::cache::{CacheModel, CacheOutcome};
use crate::metrics::RequestRow;
use crate::plan_mode::Mode;
use crate::prompt::Request;
use crate::scenario::Session;

/// `kind` of a request made by an assistant step.
pub(super) const REPLY: &str = "reply";

/// Prices one request against the cache and advances the stream's clock past the reply.
pub(super) fn price(
    request: &Request,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
    stream: &mut Stream,
    mode: Mode,
    out: &Replay,
    session: &Session,
) -> Result<RequestRow, ReplayError> {
    let model = env.prices.get(&request.model).ok_or_else(|| ReplayError {
        place: session.path.display().to_string(),
        message: format!("model `{}` is not in the pricing table", request.model),
        hint: format!(
            "use one of: {}; or add it with --pricing FILE",
            env.prices.names().collect::<Vec<_>>().join(", ")
        ),
    })?;
    let outcome: CacheOutcome = cache.lookup(request);
    if let Some(why) = &outcome.rejected {
        return Err(ReplayError {
            place: format!(
                "{}: {} (request {}, {})",
                session.path.display(),
                session.step_place(request.step),
                out.rows.len() + 1,
                cache.name()
            ),
            message: why.clone(),
            hint: "place at most 4 `cache_control` marks on the blocks of one request, longer TTLs first; the harness must move or drop older marks".into(),
        });
    }
    let ttft = env.latency_for(&model.provider).ttft_ms(&outcome);
    let visible_at = request.sent_at_ms + ttft.round() as u64;
    let decode = session.scenario.timing.decode_tokens_per_s.max(1e-3);
    let completed_at = visible_at + (request.output_tokens as f64 * 1000.0 / decode).round() as u64;
    cache.store(request, &outcome, visible_at, completed_at);
    stream.clock_ms = completed_at;
    let broke = stream
        .previous_prompt
        .is_some_and(|prev| outcome.cached_tokens < prev);
    stream.previous_prompt = Some(outcome.prompt_tokens);
    let break_reason = match (&outcome.stop, broke) {
        (Some(stop), true) => stop.to_string(),
        _ => String::new(),
    };
    Ok(RequestRow {
        scenario: out.scenario.clone(),
        strategy: out.strategy.clone(),
        cache: out.cache.clone(),
        request: out.rows.len() + 1,
        step: request.step + 1,
        mode: mode.to_string(),
        model: request.model.clone(),
        prompt_tokens: outcome.prompt_tokens,
        cached_tokens: outcome.cached_tokens,
        cache_write_tokens: outcome.cache_write_tokens(),
        recomputed_tokens: outcome.recomputed_tokens(),
        output_tokens: request.output_tokens,
        hit_rate: outcome.hit_rate(),
        cost_usd: model.cost_billed(&outcome, request.output_tokens, cache.charges_writes()),
        ttft_ms: ttft,
        break_reason,
        stream: request.stream.clone(),
        sent_at_ms: request.sent_at_ms,
        input_tokens: outcome.uncached_input_tokens,
        cache_creation_input_tokens: outcome.cache_write_tokens(),
        cache_creation_5m_tokens: outcome.write_5m_tokens,
        cache_creation_1h_tokens: outcome.write_1h_tokens,
        cache_read_input_tokens: outcome.cached_tokens,
        kind: REPLY.to_string(),
    })
}
