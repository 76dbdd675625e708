//! Writes the benchmark tokenizer corpus to a directory, so other tools (the Python tiktoken
//! comparison in `benches/compare_tiktoken.py`) measure the same bytes, then times tiktoken-rs and
//! plancache's own tokenizer (its default backend, memo bypassed) on it and prints one line per
//! library, encoding and part; exits 1 when their ids differ.
//!
//! `cargo run --release --example write_corpus -- DIR [MB_EACH]`

#[path = "../benches/common/corpus.rs"]
mod corpus;

use std::time::Instant;

use plancache::prompt::{Encoding, Tokenizer};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: write_corpus DIR [MB_EACH]");
        std::process::exit(2);
    };
    let mb: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let dir = std::path::PathBuf::from(dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(2);
    }
    let parts = corpus::corpus((mb * 1_000_000.0) as usize);
    for (name, text) in &parts {
        let path = dir.join(format!("{name}.txt"));
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("{}: {e}", path.display());
            std::process::exit(2);
        }
    }
    for (enc, bpe, ours) in [
        (
            "o200k_base",
            tiktoken_rs::o200k_base_singleton(),
            Tokenizer::new(Encoding::O200kBase),
        ),
        (
            "cl100k_base",
            tiktoken_rs::cl100k_base_singleton(),
            Tokenizer::new(Encoding::Cl100kBase),
        ),
    ] {
        for (name, text) in &parts {
            // Best of three runs, like the Python side.
            let (tokens, rate) = best_of_three(text, || bpe.encode_ordinary(text));
            println!("rust tiktoken-rs {enc} {name}: {tokens} tokens, {rate:.1} MB/s");
            // plancache's own path (the default backend), without its memo.
            let (mine, rate) = best_of_three(text, || ours.encode_uncached(text));
            println!(
                "rust plancache {enc} {name}: {mine} tokens, {rate:.1} MB/s ({})",
                Tokenizer::backend()
            );
            if bpe.encode_ordinary(text) != ours.encode_uncached(text) {
                eprintln!("{enc} {name}: plancache's ids differ from tiktoken-rs's");
                std::process::exit(1);
            }
        }
    }
}

/// Token count and best rate (MB/s) of three runs of `encode` over `text`.
fn best_of_three(text: &str, encode: impl Fn() -> Vec<u32>) -> (usize, f64) {
    let mut best = f64::MAX;
    let mut tokens = 0;
    for _ in 0..3 {
        let t = Instant::now();
        tokens = encode().len();
        best = best.min(t.elapsed().as_secs_f64());
    }
    (tokens, text.len() as f64 / best / 1e6)
}
