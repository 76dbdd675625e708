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
) -> Result<(), String> {
    if hit_rate > 1.0 + 1e-9 {
        return Err(format!(
            "{place}: hit_rate {hit_rate} is above 1 (cached tokens cannot exceed the prompt)\n  hint: regenerate the file with `plancache run --out DIR`"
        ));
    }
    if let Some(n) = requests {
        let most = cap * n.max(1.0);
        if cost_usd > most {
            return Err(format!(
                "{place}: cost_usd {cost_usd} is more than {n} request(s) can cost (at most ${cap:.0} each: every token of the largest prompt the budget allows at the table's highest rate)\n  hint: regenerate the file with `plancache run --out DIR`"
            ));
        }
    }
    Ok(())
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
