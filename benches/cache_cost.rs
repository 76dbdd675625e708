//! `cache_cost`: strategies compared by a deterministic quantity instead of time: recomputed
//! tokens and session cost in micro-dollars, on the bundled scenarios and a long generated
//! session, under the default cache model.
//!
//! `cargo bench --bench cache_cost -- --save-baseline main` then, after a change,
//! `cargo bench --bench cache_cost -- --baseline main` shows exactly how each strategy moved
//! (values are exact, so any change is real; there is no noise to filter).

#[path = "common/measure.rs"]
mod measure;
#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use measure::Quantity;
use plancache::cache::DEFAULT_CACHE;
use plancache::engine::{self, ReplayEnv};
use plancache::strategy;

fn sessions_under_test() -> Vec<plancache::scenario::Session> {
    let mut s = sessions::bundled();
    s.push(sessions::long_session(200, 17));
    s
}

fn bench_quantity(
    c: &mut Criterion<Quantity>,
    group_name: &str,
    per_run: fn(&engine::RunReport) -> f64,
) {
    let env = ReplayEnv::default();
    let sessions = sessions_under_test();
    let caches = vec![DEFAULT_CACHE.to_string()];
    let mut group = c.benchmark_group(group_name);
    group.sample_size(10);
    for s in strategy::all() {
        let one = vec![s];
        let value = per_run(&engine::run(&sessions, &one, &caches, &env).expect("replays"));
        group.bench_function(BenchmarkId::from_parameter(one[0].name()), |b| {
            // Every iteration costs exactly `value`; report it for each iteration criterion asks for.
            b.iter_custom(|iters| black_box(value) * iters as f64)
        });
    }
    group.finish();
}

fn recomputed(c: &mut Criterion<Quantity>) {
    bench_quantity(c, "cache_cost/recomputed_tokens", |r| {
        r.summaries()
            .iter()
            .map(|s| s.recomputed_tokens as f64)
            .sum()
    });
}

fn dollars(c: &mut Criterion<Quantity>) {
    bench_quantity(c, "cache_cost/micro_usd", |r| {
        r.summaries()
            .iter()
            .map(|s| s.cost_usd * 1e6)
            .sum::<f64>()
            .round()
    });
}

criterion_group! {
    name = tokens;
    config = Criterion::default().without_plots().with_measurement(Quantity { unit: "tokens" });
    targets = recomputed
}
criterion_group! {
    name = money;
    config = Criterion::default().without_plots().with_measurement(Quantity { unit: "µ$" });
    targets = dollars
}
criterion_main!(tokens, money);
