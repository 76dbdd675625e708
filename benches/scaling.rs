//! `scaling`: time per request as sessions grow.
//!
//! - `scaling/requests/N`: generated sessions of 50, 100, 200 and 400 requests under
//!   permission-mode and the default cache model; throughput is in requests, so criterion's
//!   per-element time is the time per request, which must stay flat (target: 400 within 1.2x
//!   of 50).
//! - `scaling/openai/N`, `scaling/gemini/N`: the same sessions under the legacy `openai` model
//!   and under `gemini` (token units aging out of a one-hour `max_age`), which must stay flat
//!   too (their lookups and stores cost the new tokens, not the prompt).
//! - `scaling/session-5000/all-strategies-all-caches`: a 5,000-request session under every
//!   strategy and every registered cache model (`common/caches.rs`), one thread (target: under
//!   3 s). With `PLANCACHE_CPU_ROUNDS=N` (and `PLANCACHE_CPU_SKIP=a,b` to leave models out), the
//!   grid's thread CPU is printed first, then each model's alone.

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
    // As the CLI runs: memory freed by one replay kept for the next.
    plancache::util::heap::keep_freed_memory();
    let env = ReplayEnv::default();
    let prices = PriceTable::bundled();
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    for n in [50u32, 100, 200, 400] {
        let session = sessions::long_session(n, 5);
        let count = sessions::requests_of(&session).len() as u64;
        group.throughput(Throughput::Elements(count));
        for (label, model) in [
            ("requests", DEFAULT_CACHE),
            ("openai", "openai"),
            ("gemini", "gemini"),
        ] {
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
    // Under `cargo test --benches` (no `--bench` argument) each benchmark runs once in a debug
    // build as a smoke test: a tenth of the session keeps that run short.
    let requests = if bench { 5000 } else { 500 };
    let long = vec![sessions::long_session(requests, 13)];
    // Every registered model.
    let all_caches = caches::grid();
    let strategies = strategy::all();
    // `PLANCACHE_CPU_ROUNDS=N cargo bench --bench scaling`: before criterion, the grid's thread
    // CPU time over N rounds (median; the figure docs/performance.md gives).
    if let Some(rounds) = std::env::var("PLANCACHE_CPU_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        // `PLANCACHE_CPU_SKIP=a,b`: leave these models out of the timed grid (to time the rest
        // apart from one slow model); the criterion benchmark below always runs every model.
        let skip = std::env::var("PLANCACHE_CPU_SKIP").unwrap_or_default();
        let all_caches: Vec<String> = all_caches
            .iter()
            .filter(|m| !skip.split(',').any(|s| s == m.as_str()))
            .cloned()
            .collect();
        let mut grid = Vec::new();
        for _ in 0..rounds {
            grid.push(
                cpu::cpu_of(|| {
                    engine::run(&long, &strategies, &all_caches, &env).expect("replays")
                })
                .0,
            );
        }
        eprintln!(
            "cpu: {requests}-request session x {} strategies x {} models: {:?} (median of {rounds})",
            strategies.len(),
            all_caches.len(),
            cpu::median(&mut grid)
        );
        // Then each model alone under every strategy (one round): where the grid's time goes.
        for model in &all_caches {
            let (t, _) = cpu::cpu_of(|| {
                engine::run(&long, &strategies, std::slice::from_ref(model), &env).expect("replays")
            });
            eprintln!("cpu:   {model:>18} {t:?}");
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
