//! The `scaling` bench covers every registered cache model: each one is in its 5,000-request
//! grid or, named as not yet incremental, in its per-size `unit-prefix` runs.

#[path = "../benches/common/caches.rs"]
mod caches;

use plancache::cache::CACHE_NAMES;

#[test]
fn every_registered_cache_model_is_in_the_scaling_bench() {
    let grid = caches::grid();
    for name in CACHE_NAMES {
        let in_grid = grid.iter().any(|g| g == name);
        let apart = caches::NOT_INCREMENTAL.contains(name);
        assert!(
            in_grid != apart,
            "`{name}` must be in exactly one of the scaling bench's grid and unit-prefix runs"
        );
    }
    // Only registered models are named apart, and the grid holds all the others: with 12
    // registered models and 1 apart (`gemini`), 11.
    assert!(caches::NOT_INCREMENTAL
        .iter()
        .all(|n| CACHE_NAMES.contains(n)));
    assert_eq!(
        grid.len(),
        CACHE_NAMES.len() - caches::NOT_INCREMENTAL.len()
    );
    assert_eq!(grid.len(), 11);
}
