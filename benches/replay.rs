//! `replay`: the whole pipeline (state machine, strategy, cache model, metrics) in requests per
//! second, per strategy, on the bundled scenarios and on a generated 200-request session whose
//! context ends near 150k tokens; plus that session under every strategy and every cache model.

#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use plancache::cache::CACHE_NAMES;
use plancache::engine::{self, ReplayEnv};
use plancache::scenario::Session;
use plancache::strategy;

fn requests(sessions: &[Session]) -> u64 {
    sessions
        .iter()
        .map(|s| sessions::requests_of(s).len() as u64)
        .sum()
}

fn replay(c: &mut Criterion) {
    // As the CLI runs: memory freed by one replay kept for the next.
    plancache::util::heap::keep_freed_memory();
    let env = ReplayEnv::default();
    let bundled = sessions::bundled();
    let long = vec![sessions::long_session(200, 11)];
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    for (label, set) in [("bundled", &bundled), ("long-200", &long)] {
        group.throughput(Throughput::Elements(requests(set)));
        for s in strategy::all() {
            let one = vec![s];
            group.bench_function(BenchmarkId::new(label, one[0].name()), |b| {
                b.iter(|| {
                    let report =
                        engine::run(set, &one, &["anthropic".to_string()], &env).expect("replays");
                    black_box(report.replays.len())
                })
            });
        }
    }
    // The whole grid on the long session: every strategy x every cache model.
    let all_caches: Vec<String> = CACHE_NAMES.iter().map(|s| s.to_string()).collect();
    let strategies = strategy::all();
    group.throughput(Throughput::Elements(
        requests(&long) * (strategies.len() * all_caches.len()) as u64,
    ));
    group.bench_function("long-200/all-strategies-all-caches", |b| {
        b.iter(|| {
            let report = engine::run(&long, &strategies, &all_caches, &env).expect("replays");
            black_box(report.replays.len())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = replay
}
criterion_main!(benches);
