//! Hit rate per request, one line per strategy.

use super::data::Group;
use super::per_request::PerRequest;

/// The hit-rate chart of `group`: cached over prompt tokens per request, one line per strategy.
pub fn chart(group: &Group<'_>) -> PerRequest {
    let mut c = PerRequest::from_group(
        group,
        "Cache hit rate per request",
        "hit rate (cached / prompt tokens)",
        // A little headroom above 100% (no tick there).
        |y| {
            if y <= 1.0 + 1e-9 {
                format!("{:.0}%", y * 100.0)
            } else {
                String::new()
            }
        },
        |rows| rows.iter().map(|r| r.hit_rate).collect(),
        1.0,
    );
    c.y_max = 1.05;
    c
}
