//! `workload` on the 87 bundled kv-cache-tester traces (6,368 requests, 729.7 M prompt tokens)
//! under every cache model: the traces are read once, each iteration builds the prompts and
//! replays every session. Engines share one pool (single-threaded); the other models replay
//! independent sessions in parallel (rayon). Target: every model < 2 s in release on 2 cores
//! (figures in docs/performance.md).

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use plancache::cache::{PriceTable, CACHE_NAMES};
use plancache::trace;
use plancache::workload::replay::{self, CacheSpec};
use plancache::workload::{starts, Arrivals, BuildOptions};

fn bench(c: &mut Criterion) {
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
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
