//! `scaling`: time per request as sessions grow.
//!
//! - `scaling/requests/N`: generated sessions of 50, 100, 200 and 400 requests under
//!   permission-mode and the default cache model; throughput is in requests, so criterion's
//!   per-element time is the time per request, which must stay flat (target: 400 within 1.2x
//!   of 50).
//! - `scaling/openai/N`: the same sessions under the legacy `openai` model, which must stay
//!   flat too (its lookups cost the new tokens, not the prompt).
//! - `scaling/session-5000/all-strategies-all-caches`: a 5,000-request session under every
//!   strategy and every cache model whose lookups cost what a request adds (all but those
//!   `common/caches.rs` names as not incremental: `gemini`), one thread (target: under 3 s).
//! - `scaling/unit-prefix/NAME/N`: the models named not incremental (`gemini`) on the 50–200-
//!   request sessions (their time per request still grows with the prompt).

#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
#[path = "common/caches.rs"]
mod caches;
#[path = "common/cpu.rs"]
mod cpu;

use plancache::cache::{self, PriceTable, DEFAULT_CACHE};
use plancache::engine::{self, ReplayEnv};
use plancache::strategy::{self, PermissionMode};

fn scaling(c: &mut Criterion) {
    let env = ReplayEnv::default();
    let prices = PriceTable::bundled();
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    for n in [50u32, 100, 200, 400] {
        let session = sessions::long_session(n, 5);
        let count = sessions::requests_of(&session).len() as u64;
        group.throughput(Throughput::Elements(count));
        for (label, model) in [("requests", DEFAULT_CACHE), ("openai", "openai")] {
            group.bench_function(BenchmarkId::new(label, n), |b| {
                b.iter(|| {
                    let mut model = cache::build(model, &prices).expect("known model");
                    let r = engine::replay(&session, &PermissionMode, model.as_mut(), &env)
                        .expect("replays");
                    black_box(r.rows.len())
                })
            });
        }
    }
    let bench = std::env::args().any(|a| a == "--bench");
    // The unit-prefix models grow per request (`gemini` took 0.5 s for 50 requests and 43 s for
    // 400 here): 50 to 200 requests, and 20 as a smoke test under `cargo test --benches`.
    let sizes: &[u32] = if bench { &[50, 100, 200] } else { &[20] };
    for &n in sizes {
        let session = sessions::long_session(n, 5);
        group.throughput(Throughput::Elements(
            sessions::requests_of(&session).len() as u64
        ));
        for &model in caches::NOT_INCREMENTAL {
            let id = BenchmarkId::new(format!("unit-prefix/{model}"), n);
            group.bench_function(id, |b| {
                b.iter(|| {
                    let mut model = cache::build(model, &prices).expect("known model");
                    let r = engine::replay(&session, &PermissionMode, model.as_mut(), &env)
                        .expect("replays");
                    black_box(r.rows.len())
                })
            });
        }
    }
    // Under `cargo test --benches` (no `--bench` argument) each benchmark runs once in a debug
    // build as a smoke test: a tenth of the session keeps that run short.
    let requests = if bench { 5000 } else { 500 };
    let long = vec![sessions::long_session(requests, 13)];
    // Every registered model but those named not incremental, which are measured above.
    let all_caches = caches::grid();
    let strategies = strategy::all();
    // `PLANCACHE_CPU_ROUNDS=N cargo bench --bench scaling`: before criterion, the grid's thread
    // CPU time over N rounds (median), and, beside it, each model named not incremental on the
    // same session and strategies (the figure docs/performance.md gives).
    if let Some(rounds) = std::env::var("PLANCACHE_CPU_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut grid = Vec::new();
        let mut apart: Vec<Vec<std::time::Duration>> =
            vec![Vec::new(); caches::NOT_INCREMENTAL.len()];
        for _ in 0..rounds {
            grid.push(
                cpu::cpu_of(|| {
                    engine::run(&long, &strategies, &all_caches, &env).expect("replays")
                })
                .0,
            );
            // Set `PLANCACHE_CPU_APART=1` to time them too (gemini alone takes minutes here).
            if std::env::var_os("PLANCACHE_CPU_APART").is_none() {
                continue;
            }
            for (i, name) in caches::NOT_INCREMENTAL.iter().enumerate() {
                let one = vec![name.to_string()];
                apart[i].push(
                    cpu::cpu_of(|| engine::run(&long, &strategies, &one, &env).expect("replays")).0,
                );
            }
        }
        eprintln!(
            "cpu: {requests}-request session x {} strategies x {} models: {:?} (median of {rounds})",
            strategies.len(),
            all_caches.len(),
            cpu::median(&mut grid)
        );
        for (i, name) in caches::NOT_INCREMENTAL.iter().enumerate() {
            if apart[i].is_empty() {
                continue;
            }
            eprintln!(
                "cpu: the same session x {} strategies under {name} alone: {:?}",
                strategies.len(),
                cpu::median(&mut apart[i])
            );
        }
    }
    group.sample_size(10);
    group.throughput(Throughput::Elements(
        sessions::requests_of(&long[0]).len() as u64 * (strategies.len() * all_caches.len()) as u64,
    ));
    group.bench_function("session-5000/all-strategies-all-caches", |b| {
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
    targets = scaling
}
criterion_main!(benches);
