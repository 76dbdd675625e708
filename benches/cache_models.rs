//! `cache_models`: each cache model fed the requests of a generated long session, in new tokens
//! per second, next to plain xxh3 hashing of the same new token bytes (the floor any
//! hash-based prefix cache has to pay), hashed in place; `xxh3-of-new-tokens-copied` is the
//! same with a copy into a new `Vec<u8>` per request, as the reference used to be measured.
//! `blocks-floor` is what any block-hash prefix cache (paged, radix) pays at least over the same
//! requests: the chained hash of each new 16-token block ([`cache::chain_hash`], as the models
//! compute it), and one insert per new block into a hashbrown table sized beforehand;
//! `block-hashes` is its first half alone (the chained hashes, no table).
//! Each request is fed as the engine feeds it, under its sent hint (see [`sent_hints`]).

#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

#[path = "common/cpu.rs"]
mod cpu;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hashbrown::hash_table::{Entry, HashTable};
use plancache::cache::{self, chain_hash, with_hint, PriceTable, SentHint, CACHE_NAMES};
use plancache::prompt::Segment;
use xxhash_rust::xxh3::xxh3_64;

/// Tokens per block of the block-hash caches (vLLM's default block size).
const BLOCK: usize = 16;

/// What each request adds in whole blocks: (blocks kept from the previous request, the token
/// bytes of the blocks from there to the end of its last full block), laid out before timing.
/// A block is new when the previous prompt does not hold it whole (the tokens it shares with
/// the previous prompt end inside it or before it).
fn new_blocks(requests: &[sessions::Recorded]) -> Vec<(usize, Vec<u8>)> {
    let mut prev: Vec<u32> = Vec::new();
    requests
        .iter()
        .map(|r| {
            let cur: Vec<u32> = r.request.tokens().collect();
            let shared = cur.iter().zip(&prev).take_while(|(a, b)| a == b).count();
            let keep = shared / BLOCK;
            let end = cur.len() / BLOCK * BLOCK;
            let bytes = cur[(keep * BLOCK).min(end)..end]
                .iter()
                .flat_map(|t| t.to_le_bytes())
                .collect();
            prev = cur;
            (keep, bytes)
        })
        .collect()
}

/// The chained block hashes of `requests` (see [`new_blocks`]): each request's chain truncated
/// to the blocks it keeps, then one chained hash per new block ([`chain_hash`]), each handed to
/// `each`.
fn block_hashes(requests: &[(usize, Vec<u8>)], chain: &mut Vec<u64>, mut each: impl FnMut(u64)) {
    chain.clear();
    for (keep, bytes) in requests {
        chain.truncate(*keep);
        let mut prev = chain.last().copied().unwrap_or(0);
        for block in bytes.chunks_exact(BLOCK * 4) {
            prev = chain_hash(prev, block);
            chain.push(prev);
            each(prev);
        }
    }
}

/// The block floor over `requests`: their [`block_hashes`], and one probe-and-insert per new
/// block into `table` (emptied first, its room kept).
fn blocks_floor(requests: &[(usize, Vec<u8>)], chain: &mut Vec<u64>, table: &mut HashTable<u64>) {
    table.clear();
    block_hashes(requests, chain, |h| {
        // The hash is the table's hash too (it is one already).
        if let Entry::Vacant(v) = table.entry(h, |&x| x == h, |&x| x) {
            v.insert(h);
        }
    });
}

/// What the engine tells the cache models about each request (see `engine/send.rs`): the
/// leading segments that are, by identity, those of the stream's previous request. Laid out
/// before timing; a model fed without them compares every request's whole segment list (a cost
/// the engine's requests never pay, linear in segments rather than in new tokens).
fn sent_hints(requests: &[sessions::Recorded]) -> Vec<SentHint> {
    let mut last: HashMap<&str, (&[Arc<Segment>], u64)> = HashMap::new();
    requests
        .iter()
        .map(|r| {
            let segs = &r.request.segments;
            let (prev, base) = last
                .get(r.request.stream.as_str())
                .copied()
                .unwrap_or((&[], 0));
            let unchanged = prev
                .iter()
                .zip(segs)
                .take_while(|(a, b)| Arc::ptr_eq(a, b))
                .count();
            let hint = SentHint::new(segs, base, unchanged);
            last.insert(r.request.stream.as_str(), (segs, hint.serial()));
            hint
        })
        .collect()
}

fn cache_models(c: &mut Criterion) {
    // As the CLI runs: memory freed by one replay kept for the next.
    plancache::util::heap::keep_freed_memory();
    let session = sessions::long_session(200, 7);
    let requests = sessions::requests_of(&session);
    let fresh = sessions::new_tokens(&requests);
    let new_tokens: usize = fresh.iter().map(Vec::len).sum();
    let prices = PriceTable::bundled();
    let fresh_bytes: Vec<Vec<u8>> = fresh
        .iter()
        .map(|toks| toks.iter().flat_map(|t| t.to_le_bytes()).collect())
        .collect();
    let blocks = new_blocks(&requests);
    let new_block_count: usize = blocks.iter().map(|(_, b)| b.len() / (BLOCK * 4)).sum();
    let mut chain = Vec::with_capacity(
        requests
            .iter()
            .map(|r| r.request.tokens().count())
            .max()
            .unwrap_or(0)
            / BLOCK,
    );
    let mut table = HashTable::with_capacity(new_block_count);
    let hints = sent_hints(&requests);
    // Each request fed as the engine feeds it: its lookup and store under its sent hint.
    let replay = |name: &str| {
        let mut model = cache::build(name, &prices).expect("known model");
        let mut cached = 0;
        for (r, &hint) in requests.iter().zip(&hints) {
            with_hint(hint, || {
                let outcome = model.lookup(&r.request);
                cached += outcome.cached_tokens;
                model.store(&r.request, &outcome, r.visible_at_ms, r.completed_at_ms);
            });
        }
        black_box(cached)
    };
    // The same without the hints (the bench's figure before 2026-12-04): every request's
    // segment list compared whole by each model's cursor.
    let replay_unhinted = |name: &str| {
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
        let mut block_floor = Vec::new();
        let mut hashes_only = Vec::new();
        let mut per: Vec<Vec<std::time::Duration>> = vec![Vec::new(); CACHE_NAMES.len()];
        let mut unhinted: Vec<Vec<std::time::Duration>> = vec![Vec::new(); CACHE_NAMES.len()];
        for round in 0..rounds {
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
            let (t, _) = cpu::cpu_of(|| {
                for _ in 0..FLOOR_REPS {
                    blocks_floor(black_box(&blocks), &mut chain, &mut table);
                    black_box(table.len());
                }
            });
            block_floor.push(t / FLOOR_REPS);
            let (t, _) = cpu::cpu_of(|| {
                for _ in 0..FLOOR_REPS {
                    block_hashes(black_box(&blocks), &mut chain, |h| {
                        black_box(h);
                    });
                }
            });
            hashes_only.push(t / FLOOR_REPS);
            for (i, name) in CACHE_NAMES.iter().enumerate() {
                // Which of the two runs first alternates by round (the second finds the
                // allocator's memory already mapped).
                if round % 2 == 0 {
                    per[i].push(cpu::cpu_of(|| replay(name)).0);
                    unhinted[i].push(cpu::cpu_of(|| replay_unhinted(name)).0);
                } else {
                    unhinted[i].push(cpu::cpu_of(|| replay_unhinted(name)).0);
                    per[i].push(cpu::cpu_of(|| replay(name)).0);
                }
            }
        }
        let floor = cpu::median(&mut floor);
        let block_floor = cpu::median(&mut block_floor);
        let hashes_only = cpu::median(&mut hashes_only);
        eprintln!(
            "cpu: {rounds} rounds, {new_tokens} new tokens; xxh3-of-new-tokens {floor:?} ({:.2} G tokens/s)",
            new_tokens as f64 / floor.as_secs_f64() / 1e9
        );
        let generated: u64 = requests.iter().map(|r| r.request.output_tokens).sum();
        eprintln!(
            "cpu: {generated} generated tokens (reasoning and replies) over {} requests",
            requests.len()
        );
        eprintln!(
            "cpu: {new_block_count} new blocks; block-hashes {hashes_only:?} = {:.1}x xxh3; blocks-floor {block_floor:?} = {:.1}x xxh3",
            hashes_only.as_secs_f64() / floor.as_secs_f64(),
            block_floor.as_secs_f64() / floor.as_secs_f64()
        );
        for (i, name) in CACHE_NAMES.iter().enumerate() {
            let m = cpu::median(&mut per[i]);
            let u = cpu::median(&mut unhinted[i]);
            eprintln!(
                "cpu: {name:>18} {m:>12?}  {:>8.1}x xxh3  {:>6.1}x blocks-floor  (unhinted {u:?}, {:.1}x xxh3)",
                m.as_secs_f64() / floor.as_secs_f64(),
                m.as_secs_f64() / block_floor.as_secs_f64(),
                u.as_secs_f64() / floor.as_secs_f64()
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
    group.bench_function("block-hashes", |b| {
        b.iter(|| {
            block_hashes(black_box(&blocks), &mut chain, |h| {
                black_box(h);
            });
            chain.len()
        })
    });
    group.bench_function("blocks-floor", |b| {
        b.iter(|| {
            blocks_floor(black_box(&blocks), &mut chain, &mut table);
            table.len()
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
