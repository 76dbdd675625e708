//! Which registered cache models the `scaling` bench runs where (shared with
//! tests/bench_coverage.rs, which fails when a registered model is in neither list).

use plancache::cache::CACHE_NAMES;

/// Models whose work per request still grows with the session: `gemini` (token units, a
/// one-hour `max_age` counted from the write). Its lookups and stores cost what a request adds
/// except for one thing: every unit that ages out is written anew, one by one, so in hour `k`
/// of a session each request rewrites about `k - 1` times its new tokens. tests/cache_work.rs
/// counts 1.78x the work per request at 1,000 requests (4.2 hours) as at 100 (22 minutes), down
/// from 208x, and holds it under 2x; the 5,000-request grid (about 20 hours) leaves it out and
/// `scaling/unit-prefix/NAME/N` measures it on the 50–200-request sessions instead. `deepseek`
/// (64-token units, a 3-day `max_age`) counts flat work and is in the grid.
pub const NOT_INCREMENTAL: &[&str] = &["gemini"];

/// Every other registered model: the 5,000-request grid.
pub fn grid() -> Vec<String> {
    CACHE_NAMES
        .iter()
        .filter(|name| !NOT_INCREMENTAL.contains(name))
        .map(|s| s.to_string())
        .collect()
}
