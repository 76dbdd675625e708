//! Hit rate per request, one line per strategy.

use super::data::Group;
use super::per_request::PerRequest;

pub fn chart(group: &Group<'_>) -> PerRequest {
    let mut c = PerRequest::from_group(
        group,
        "Cache hit rate per request",
        "hit rate (cached / prompt tokens)",
        // Headroom above 100% holds the break labels; it gets no ticks.
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
    // Room above 100% for the break labels.
    c.y_max = 1.0 + 0.1 * (c.lines.len() as f64 + 1.0);
    c
}
