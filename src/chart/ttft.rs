//! Estimated time to first token per request (from the latency model).

use super::data::Group;
use super::per_request::PerRequest;

/// The estimated time-to-first-token chart of `group`, one line per strategy.
pub fn chart(group: &Group<'_>) -> PerRequest {
    PerRequest::from_group(
        group,
        "Estimated time to first token",
        "TTFT (ms)",
        |y| format!("{y:.0}"),
        |rows| rows.iter().map(|r| r.ttft_ms).collect(),
        1.0,
    )
}
