//! Cumulative recomputed tokens over the session: the prefill work a layout costs.

use super::data::{cumulative_recomputed, Group};
use super::per_request::PerRequest;

/// The cumulative recomputed-tokens chart of `group`, one line per strategy.
pub fn chart(group: &Group<'_>) -> PerRequest {
    PerRequest::from_group(
        group,
        "Cumulative recomputed tokens",
        "recomputed tokens (running total)",
        thousands,
        |rows| {
            cumulative_recomputed(rows)
                .into_iter()
                .map(|v| v as f64)
                .collect()
        },
        1.0,
    )
}

/// `12345` -> `12.3k`, small values as integers.
pub fn thousands(y: f64) -> String {
    if y.abs() >= 1_000_000.0 {
        format!("{:.1}M", y / 1_000_000.0)
    } else if y.abs() >= 1000.0 {
        format!("{:.1}k", y / 1000.0)
    } else {
        format!("{y:.0}")
    }
}
