//! `strategies`: one long session under every strategy (default cache model). Besides timing each,
//! prints the comparison table once, so `cargo bench` also shows what each strategy costs.

#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use plancache::cache::DEFAULT_CACHE;
use plancache::engine::{self, ReplayEnv};
use plancache::export::render_table;
use plancache::strategy;

fn strategies(c: &mut Criterion) {
    // As the CLI runs: memory freed by one replay kept for the next.
    plancache::util::heap::keep_freed_memory();
    let env = ReplayEnv::default();
    let long = vec![sessions::long_session(200, 13)];
    let caches = vec![DEFAULT_CACHE.to_string()];
    let all = strategy::all();
    let report = engine::run(&long, &all, &caches, &env).expect("replays");
    println!("\n{}", render_table(&report.summaries()));
    let mut group = c.benchmark_group("strategies");
    group.sample_size(10);
    for s in all {
        let rows = report
            .replays
            .iter()
            .find(|r| r.strategy == s.name())
            .map_or(0, |r| r.rows.len());
        group.throughput(Throughput::Elements(rows as u64));
        let one = vec![s];
        group.bench_function(BenchmarkId::from_parameter(one[0].name()), |b| {
            b.iter(|| {
                let r = engine::run(&long, &one, &caches, &env).expect("replays");
                black_box(r.replays.len())
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = strategies
}
criterion_main!(benches);
