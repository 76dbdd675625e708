//! Which figures a replay can produce: the gate (and `merge`) refuses any other, so a doctored
//! or corrupted file cannot pass a regression.
//!
//! A request's cost is at most every token of the largest prompt the resource budget allows
//! (`--max-session-tokens`) billed at the most expensive per-token rate of any model in the price
//! table (input at its highest write multiplier, or output), plus a day of cache storage where a
//! model bills storage. A summary's cost is at most that cap times its requests.

use crate::budget::Budget;
use crate::cache::PriceTable;

/// The most one request can cost, in USD.
pub fn request_cap(prices: &PriceTable, budget: &Budget) -> f64 {
    let rate = prices
        .names()
        .filter_map(|n| prices.resolve(n))
        .map(|m| {
            let input = m.input * m.write_5m.max(m.write_1h).max(1.0);
            input.max(m.output) + m.storage_per_mtok_hour * 24.0
        })
        .fold(0.0, f64::max);
    budget.max_session_tokens as f64 * rate / 1_000_000.0
}

/// Checks one summary's figures: a hit rate of at most 1 and a cost of at most `cap` per
/// request. `place` names the row (`file:line`).
pub fn check_summary(
    place: &str,
    hit_rate: f64,
    cost_usd: f64,
    requests: Option<f64>,
    cap: f64,
) -> Result<(), FigureError> {
    if hit_rate > 1.0 + 1e-9 {
        return Err(FigureError::HitRateAbove {
            place: place.to_string(),
            hit_rate,
        });
    }
    if let Some(n) = requests {
        let most = cap * n.max(1.0);
        if cost_usd > most {
            return Err(FigureError::CostAbove {
                place: place.to_string(),
                cost_usd,
                requests: n,
                cap,
            });
        }
    }
    Ok(())
}

/// A summary's figure no replay can produce.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FigureError {
    /// A hit rate above 1.
    #[error("{place}: hit_rate {hit_rate} is above 1 (cached tokens cannot exceed the prompt)\n  hint: regenerate the file with `plancache run --out DIR`")]
    HitRateAbove {
        /// The row (`file:line`).
        place: String,
        /// The hit rate.
        hit_rate: f64,
    },
    /// A cost above what the point's requests can cost.
    #[error("{place}: cost_usd {cost_usd} is more than {requests} request(s) can cost (at most ${cap:.0} each: every token of the largest prompt the budget allows at the table's highest rate)\n  hint: regenerate the file with `plancache run --out DIR`")]
    CostAbove {
        /// The row (`file:line`).
        place: String,
        /// The cost.
        cost_usd: f64,
        /// The point's requests.
        requests: f64,
        /// The most one request can cost.
        cap: f64,
    },
}

/// A figure that must be a finite number of at least 0; `None` names what is wrong.
pub fn non_negative(v: f64) -> Result<f64, &'static str> {
    if v.is_nan() {
        Err("is not a number (NaN would pass every check)")
    } else if v.is_infinite() {
        Err("is infinite (it would allow any worsening)")
    } else if v < 0.0 {
        Err("is negative; figures are at least 0")
    } else {
        Ok(v)
    }
}
