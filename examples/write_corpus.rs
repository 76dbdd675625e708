//! Writes the benchmark tokenizer corpus to a directory, so other tools (the Python tiktoken
//! comparison in `benches/compare_tiktoken.py`) measure the same bytes, then times tiktoken-rs on
//! it and prints one line per encoding and part.
//!
//! `cargo run --release --example write_corpus -- DIR [MB_EACH]`

#[path = "../benches/common/corpus.rs"]
mod corpus;

use std::time::Instant;

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
    for (enc, bpe) in [
        ("o200k_base", tiktoken_rs::o200k_base_singleton()),
        ("cl100k_base", tiktoken_rs::cl100k_base_singleton()),
    ] {
        for (name, text) in &parts {
            // Best of three runs, like the Python side.
            let mut best = f64::MAX;
            let mut tokens = 0;
            for _ in 0..3 {
                let t = Instant::now();
                tokens = bpe.encode_ordinary(text).len();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "rust tiktoken-rs {enc} {name}: {tokens} tokens, {:.1} MB/s",
                text.len() as f64 / best / 1e6
            );
        }
    }
}
