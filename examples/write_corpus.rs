//! Writes the benchmark tokenizer corpus to a directory, so other tools (the Python tiktoken
//! comparison in `benches/compare_tiktoken.py`) measure the same bytes, then times, on it,
//! tiktoken-rs, plancache's own scanner (the default backend, feature `scanner`) and, in a
//! `--features fast-bpe` build, bpe-openai (each through plancache's `Tokenizer`, memo bypassed),
//! and prints one line per library, encoding and part; exits 1 when any ids differ from
//! tiktoken-rs's.
//!
//! Rates are bytes per second of this thread's CPU time (best of five runs): the machine is
//! shared, and CPU time does not count the time other processes hold the core.
//!
//! `cargo run --release [--features fast-bpe] --example write_corpus -- DIR [MB_EACH]`

#[path = "../benches/common/corpus.rs"]
mod corpus;
#[path = "../benches/common/cpu.rs"]
#[allow(dead_code)]
mod cpu;

use plancache::prompt::{Encoding, Tokenizer};

/// A library to time: its name and how it encodes text with a tokenizer of the encoding.
type Library = (&'static str, fn(&Tokenizer, &str) -> Vec<u32>);

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
    for (enc_name, enc) in [
        ("o200k_base", Encoding::O200kBase),
        ("cl100k_base", Encoding::Cl100kBase),
    ] {
        let tok = Tokenizer::new(enc);
        for (name, text) in &parts {
            let reference = tiktoken(&tok, text);
            for (library, encode) in libraries() {
                let (tokens, rate) = best_of_five(text, || encode(&tok, text));
                println!("rust {library} {enc_name} {name}: {tokens} tokens, {rate:.1} MB/s");
                if encode(&tok, text) != reference {
                    eprintln!("{enc_name} {name}: {library}'s ids differ from tiktoken-rs's");
                    std::process::exit(1);
                }
            }
        }
    }
}

/// tiktoken-rs's `encode_ordinary` for the tokenizer's encoding.
fn tiktoken(tok: &Tokenizer, text: &str) -> Vec<u32> {
    match tok.encoding() {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton().encode_ordinary(text),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton().encode_ordinary(text),
    }
}

/// The libraries this build can time: tiktoken-rs, plancache's scanner, and bpe-openai when
/// it is the build's backend.
fn libraries() -> Vec<Library> {
    let mut libs: Vec<Library> = vec![("tiktoken-rs", tiktoken)];
    #[cfg(feature = "scanner")]
    libs.push(("scanner", |tok, text| tok.encode_scanner(text)));
    if Tokenizer::backend() == "bpe-openai" {
        libs.push(("bpe-openai", |tok, text| tok.encode_uncached(text)));
    }
    libs
}

/// Token count and best rate (MB per second of thread CPU time) of five runs of `encode`.
fn best_of_five(text: &str, encode: impl Fn() -> Vec<u32>) -> (usize, f64) {
    let mut best = f64::MAX;
    let mut tokens = 0;
    for _ in 0..5 {
        let (took, ids) = cpu::cpu_of(&encode);
        tokens = ids.len();
        best = best.min(took.as_secs_f64());
    }
    (tokens, text.len() as f64 / best / 1e6)
}
