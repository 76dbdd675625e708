//! The `scaling` bench covers every registered cache model: each one is in its 5,000-request
//! grid.

#[path = "../benches/common/caches.rs"]
mod caches;

use plancache::cache::CACHE_NAMES;

#[test]
fn every_registered_cache_model_is_in_the_scaling_bench() {
    let grid = caches::grid();
    for name in CACHE_NAMES {
        assert!(
            grid.iter().any(|g| g == name),
            "`{name}` must be in the scaling bench's grid"
        );
    }
    // The grid holds registered models only, each once: with 12 registered models, 12.
    assert!(grid.iter().all(|g| CACHE_NAMES.contains(&g.as_str())));
    assert_eq!(grid.len(), CACHE_NAMES.len());
    assert_eq!(grid.len(), 12);
}
