//! Which registered cache models the `scaling` bench runs (shared with tests/bench_coverage.rs
//! and tests/cache_work.rs).

use plancache::cache::CACHE_NAMES;

/// The 5,000-request grid's models: every registered one. Each costs what a request adds, not
/// the length of its prompt (tests/cache_work.rs counts it); `gemini` was left out until its
/// units were kept in runs (src/cache/unit_prefix/entries.rs), since every unit that aged out of
/// its one-hour `max_age` was written anew one by one.
pub fn grid() -> Vec<String> {
    CACHE_NAMES.iter().map(|s| s.to_string()).collect()
}
