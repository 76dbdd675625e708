//! `cache_models`: each cache model fed the requests of a generated long session, in new tokens
//! per second, next to plain xxh3 hashing of the same new token bytes (the floor any
//! hash-based prefix cache has to pay), hashed in place; `xxh3-of-new-tokens-copied` is the
//! same with a copy into a new `Vec<u8>` per request, as the reference used to be measured.

#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::hint::black_box;

#[path = "common/cpu.rs"]
mod cpu;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use plancache::cache::{self, PriceTable, CACHE_NAMES};
use xxhash_rust::xxh3::xxh3_64;

fn cache_models(c: &mut Criterion) {
    let session = sessions::long_session(200, 7);
    let requests = sessions::requests_of(&session);
    let fresh = sessions::new_tokens(&requests);
    let new_tokens: usize = fresh.iter().map(Vec::len).sum();
    let prices = PriceTable::bundled();
    let fresh_bytes: Vec<Vec<u8>> = fresh
        .iter()
        .map(|toks| toks.iter().flat_map(|t| t.to_le_bytes()).collect())
        .collect();
    let replay = |name: &str| {
        let mut model = cache::build(name, &prices).expect("known model");
        let mut cached = 0;
        for r in &requests {
            let outcome = model.lookup(&r.request);
            cached += outcome.cached_tokens;
            model.store(&r.request, &outcome, r.visible_at_ms, r.completed_at_ms);
        }
        black_box(cached)
    };
    // `PLANCACHE_CPU_ROUNDS=N cargo bench --bench cache_models`: before criterion, N interleaved
    // rounds of thread CPU time per model next to the xxh3 floor, medians and ratios (the figure
    // docs/performance.md gives; CPU time holds on a loaded machine where wall time does not).
    if let Some(rounds) = std::env::var("PLANCACHE_CPU_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        const FLOOR_REPS: u32 = 50;
        let mut floor = Vec::new();
        let mut per: Vec<Vec<std::time::Duration>> = vec![Vec::new(); CACHE_NAMES.len()];
        for _ in 0..rounds {
            let (t, _) = cpu::cpu_of(|| {
                for _ in 0..FLOOR_REPS {
                    black_box(
                        fresh_bytes
                            .iter()
                            .fold(0u64, |acc, bytes| acc ^ xxh3_64(black_box(bytes))),
                    );
                }
            });
            floor.push(t / FLOOR_REPS);
            for (i, name) in CACHE_NAMES.iter().enumerate() {
                per[i].push(cpu::cpu_of(|| replay(name)).0);
            }
        }
        let floor = cpu::median(&mut floor);
        eprintln!(
            "cpu: {rounds} rounds, {new_tokens} new tokens; xxh3-of-new-tokens {floor:?} ({:.2} G tokens/s)",
            new_tokens as f64 / floor.as_secs_f64() / 1e9
        );
        for (i, name) in CACHE_NAMES.iter().enumerate() {
            let m = cpu::median(&mut per[i]);
            eprintln!(
                "cpu: {name:>18} {m:>12?}  {:>8.1}x xxh3",
                m.as_secs_f64() / floor.as_secs_f64()
            );
        }
    }
    let mut group = c.benchmark_group("cache_models");
    group.sample_size(10);
    group.throughput(Throughput::Elements(new_tokens as u64));
    // The floor: one xxh3 call per request over its new tokens' bytes, laid out before timing
    // (hashing in place; the models read token ids in place too).
    group.bench_function("xxh3-of-new-tokens", |b| {
        b.iter(|| {
            fresh_bytes
                .iter()
                .fold(0u64, |acc, bytes| acc ^ xxh3_64(black_box(bytes)))
        })
    });
    // The reference as it was measured before: each request's tokens copied into a new Vec<u8>
    // inside the timed loop, which made the floor look about 3x slower than it is.
    group.bench_function("xxh3-of-new-tokens-copied", |b| {
        b.iter(|| {
            fresh.iter().fold(0u64, |acc, toks| {
                let bytes: Vec<u8> = toks.iter().flat_map(|t| t.to_le_bytes()).collect();
                acc ^ xxh3_64(&bytes)
            })
        })
    });
    for name in CACHE_NAMES {
        group.bench_function(BenchmarkId::new("model", name), |b| b.iter(|| replay(name)));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = cache_models
}
criterion_main!(benches);
