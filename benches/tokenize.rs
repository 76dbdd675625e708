//! `tokenize`: tiktoken-rs and plancache's own tokenizer (its build's backend: the scanner by
//! default, bpe-openai with `--features fast-bpe`) on o200k_base and cl100k_base over the
//! generated corpus (MB/s), and the memoized path that replays take for content they have seen
//! before. `benches/compare_tiktoken.py` puts Python's tiktoken beside them.

#[path = "common/corpus.rs"]
mod corpus;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use plancache::prompt::{Encoding, TokenSource, Tokenizer};

/// Bytes per corpus part (three parts: prose, code, JSON).
const PART_BYTES: usize = 1_000_000;

fn tokenize(c: &mut Criterion) {
    // As the CLI runs: memory freed by one replay kept for the next.
    plancache::util::heap::keep_freed_memory();
    let parts = corpus::corpus(PART_BYTES);
    let mut group = c.benchmark_group("tokenize");
    group.sample_size(10);
    for (enc_name, bpe) in [
        ("o200k_base", tiktoken_rs::o200k_base_singleton()),
        ("cl100k_base", tiktoken_rs::cl100k_base_singleton()),
    ] {
        for (part, text) in &parts {
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(enc_name, part), text, |b, text| {
                b.iter(|| black_box(bpe.encode_ordinary(black_box(text))).len())
            });
        }
    }
    // plancache's own path (identical ids: tests/tokenizer_ids.rs), memo bypassed.
    for (enc_name, enc) in [
        ("o200k_base", Encoding::O200kBase),
        ("cl100k_base", Encoding::Cl100kBase),
    ] {
        let tok = Tokenizer::new(enc);
        let id = format!("{}/{enc_name}", Tokenizer::backend());
        for (part, text) in &parts {
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(&id, part), text, |b, text| {
                b.iter(|| black_box(tok.encode_uncached(black_box(text))).len())
            });
        }
    }
    // The memoized path: segments seen again cost a hash and a lookup, not a re-encode.
    let tok = Tokenizer::new(Encoding::O200kBase);
    let sources: Vec<TokenSource> = parts
        .iter()
        .flat_map(|(_, t)| {
            t.as_bytes()
                .chunks(4_000)
                .map(|c| String::from_utf8_lossy(c).into_owned())
        })
        .map(TokenSource::Text)
        .collect();
    for s in &sources {
        tok.tokens(Tokenizer::content_id("", s), s);
    }
    let bytes: usize = parts.iter().map(|(_, t)| t.len()).sum();
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("memoized/o200k_base", |b| {
        b.iter(|| {
            sources
                .iter()
                .map(|s| tok.tokens(Tokenizer::content_id("", s), s).len())
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = tokenize
}
criterion_main!(benches);
