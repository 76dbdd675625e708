//! Which registered cache models the `scaling` bench runs where (shared with
//! tests/bench_coverage.rs, which fails when a registered model is in neither list).

use plancache::cache::CACHE_NAMES;

/// Models whose work per request still grows with the prompt: `gemini` (token units, a one-hour
/// `max_age` from the write) does about 200 times the work per request at 1,000 requests as at
/// 100 (tests/cache_work.rs counts it), so the 5,000-request grid would be quadratic with it and
/// `scaling/unit-prefix/NAME/N` measures it on the 50–200-request sessions instead, where its
/// growth per request shows. `deepseek` counts flat work per request (1.07× from 100 to 1,000
/// requests) and is in the grid.
pub const NOT_INCREMENTAL: &[&str] = &["gemini"];

/// Every other registered model: the 5,000-request grid.
pub fn grid() -> Vec<String> {
    CACHE_NAMES
        .iter()
        .filter(|name| !NOT_INCREMENTAL.contains(name))
        .map(|s| s.to_string())
        .collect()
}
