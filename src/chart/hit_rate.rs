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
    // Room above 100% for the break labels: one row per strategy breaking at the same request.
    let mut per_request = std::collections::BTreeMap::<usize, usize>::new();
    for l in &c.lines {
        for b in &l.breaks {
            *per_request.entry(b.request).or_default() += 1;
        }
    }
    let rows = per_request.values().copied().max().unwrap_or(0);
    c.y_max = 1.05 + 0.06 * rows as f64;
    c
}
