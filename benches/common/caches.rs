//! Which registered cache models the `scaling` bench runs where (shared with
//! tests/bench_coverage.rs, which fails when a registered model is in neither list).

use plancache::cache::CACHE_NAMES;

/// Models whose lookups still cost O(prompt / unit) per request (`gemini` with token units,
/// `deepseek` with 64-token units probe and refresh every unit of the prompt): the 5,000-request
/// grid would be quadratic with them, so `scaling/unit-prefix/NAME/N` measures them on the
/// 50–200-request sessions instead, where their growth per request shows.
pub const NOT_INCREMENTAL: &[&str] = &["gemini", "deepseek"];

/// Every other registered model: the 5,000-request grid.
pub fn grid() -> Vec<String> {
    CACHE_NAMES
        .iter()
        .filter(|name| !NOT_INCREMENTAL.contains(name))
        .map(|s| s.to_string())
        .collect()
}
