//! `scaling`: generated sessions of 50, 100, 200 and 400 requests under permission-mode and the
//! default cache model. Throughput is in requests, so criterion's per-element time is the time
//! per request, which must stay flat as sessions grow (target: 400 within 1.2x of 50).

#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use plancache::cache::{self, PriceTable, DEFAULT_CACHE};
use plancache::engine::{self, ReplayEnv};
use plancache::strategy::PermissionMode;

fn scaling(c: &mut Criterion) {
    let env = ReplayEnv::default();
    let prices = PriceTable::bundled();
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    for n in [50u32, 100, 200, 400] {
        let session = sessions::long_session(n, 5);
        let count = sessions::requests_of(&session).len() as u64;
        group.throughput(Throughput::Elements(count));
        group.bench_function(BenchmarkId::new("requests", n), |b| {
            b.iter(|| {
                let mut model = cache::build(DEFAULT_CACHE, &prices).expect("default model");
                let r = engine::replay(&session, &PermissionMode, model.as_mut(), &env)
                    .expect("replays");
                black_box(r.rows.len())
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = scaling
}
criterion_main!(benches);
