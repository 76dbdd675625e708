//! `workload` on the 87 bundled kv-cache-tester traces (6,368 requests, 729.7 M prompt tokens)
//! under every cache model: the traces are read once, each iteration builds the prompts and
//! replays every session. Engines share one pool (single-threaded); the other models replay
//! independent sessions in parallel (rayon). Target: every model < 2 s in release on 2 cores
//! (figures in docs/performance.md). `workload_87_traces_paged_4k`: the paged pool of 4k blocks
//! with its unbounded twin, as `workload --kv-blocks 4k` replays them, and each alone.
//! `workload_87_traces_paged_curve`: the capacity curve `-L kv-blocks=1k..64k` (seven pools and
//! the unbounded one), its points replayed one after another (as before 2026-12-05) and on
//! requests built once with the pools replayed in parallel, as `workload -L` replays them.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use plancache::cache::{PriceTable, CACHE_NAMES};
use plancache::trace;
use plancache::workload::replay::{self, CacheSpec};
use plancache::workload::{starts, Arrivals, BuildOptions};

fn bench(c: &mut Criterion) {
    // As the CLI runs: memory freed by one replay kept for the next.
    plancache::util::heap::keep_freed_memory();
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/kv-cache-tester/traces");
    let mut traces = trace::read_path(&dir).expect("bundled traces");
    // `cargo test --benches` runs each bench once, unoptimised: three traces are enough to show
    // it still runs; `cargo bench` (which passes `--bench`) measures all 87.
    if !std::env::args().any(|a| a == "--bench") {
        traces.truncate(3);
    }
    let at = starts(&traces, Arrivals::Recorded, 0);
    let prices = PriceTable::bundled();
    let opts = BuildOptions::default();
    let requests: usize = traces.iter().map(|t| t.request_count()).sum();
    let mut g = c.benchmark_group("workload_87_traces");
    g.throughput(Throughput::Elements(requests as u64));
    g.sample_size(10);
    for name in CACHE_NAMES {
        let spec = CacheSpec::new(name).expect("registered model");
        g.bench_function(*name, |b| {
            b.iter(|| {
                let r = replay::run(&traces, &at, &spec, &opts, &prices).expect("replay");
                std::hint::black_box(replay::totals(traces.len(), &r).1.cached_tokens)
            })
        });
    }
    g.finish();
    engine_pairs(c, &traces, &at);
    capacity_curve(c, &traces, &at);
}

/// The points of `-L kv-blocks=1k..64k` under `paged`, one by one and together.
fn capacity_curve(c: &mut Criterion, traces: &[trace::Trace], at: &[u64]) {
    let prices = PriceTable::bundled();
    let opts = BuildOptions::default();
    let paged = CacheSpec::new("paged").expect("registered model");
    let specs: Vec<CacheSpec> = [1000, 2000, 4000, 8000, 16000, 32000, 64000]
        .into_iter()
        .map(Some)
        .chain([None])
        .map(|b| paged.clone().with_kv_blocks(b))
        .collect();
    let mut g = c.benchmark_group("workload_87_traces_paged_curve");
    g.sample_size(10);
    g.bench_function("points_one_after_another", |b| {
        b.iter(|| {
            let hits: u64 = specs
                .iter()
                .map(|s| {
                    let r = replay::run(traces, at, s, &opts, &prices).expect("replay");
                    replay::totals(traces.len(), &r).1.cached_tokens
                })
                .sum();
            std::hint::black_box(hits)
        })
    });
    g.bench_function("points_together", |b| {
        let bar = indicatif::ProgressBar::hidden();
        let refs: Vec<&CacheSpec> = specs.iter().collect();
        b.iter(|| {
            let all = replay::run_engines(traces, at, &refs, &opts, &prices, &bar).expect("replay");
            std::hint::black_box(all.iter().map(Vec::len).sum::<usize>())
        })
    });
    g.finish();
}

/// `workload --cache paged --kv-blocks N` replays the bounded pool and its unbounded twin (kept
/// as hashes, as it never evicts) side by side: the pair at 4k blocks (the 87 traces evict
/// there), and each pool alone.
fn engine_pairs(c: &mut Criterion, traces: &[trace::Trace], at: &[u64]) {
    let prices = PriceTable::bundled();
    let opts = BuildOptions::default();
    let bounded = CacheSpec::new("paged")
        .expect("registered model")
        .with_kv_blocks(Some(4096));
    let unbounded = bounded.clone().with_kv_blocks(None);
    let mut g = c.benchmark_group("workload_87_traces_paged_4k");
    g.sample_size(10);
    g.bench_function("pool_and_unbounded_twin", |b| {
        let bar = indicatif::ProgressBar::hidden();
        b.iter(|| {
            let (x, y) =
                replay::run_engine_pair(traces, at, (&bounded, &unbounded), &opts, &prices, &bar)
                    .expect("replay");
            std::hint::black_box((x.len(), y.len()))
        })
    });
    for (name, spec) in [("pool_alone", &bounded), ("unbounded_alone", &unbounded)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let r = replay::run(traces, at, spec, &opts, &prices).expect("replay");
                std::hint::black_box(replay::totals(traces.len(), &r).1.cached_tokens)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
