//! The fuzz targets' seed corpus (the bundled files each loader reads), mutated with a fixed seed
//! and a bounded number of iterations, run through the same harness as `cargo fuzz`
//! (`fuzz/harness.rs`) on the stable toolchain. A panic fails the test and prints the input.
//!
//! `PLANCACHE_MUTATIONS=N` sets the mutations per seed file (default 10; the scenario target
//! replays every strategy under every cache model per mutation on the debug profile).

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::Path;

/// splitmix64: the same mutations on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Values that broke loaders before: huge, negative, non-finite, wrapping, structural.
const INTERESTING: &[&str] = &[
    "1e308",
    "-1",
    "nan",
    "inf",
    "-inf",
    "0",
    "4000000000",
    "18446744073709551615",
    "18446744073709551s",
    "9223372036854775807",
    "\"\"",
    "\n",
    "\n[[steps]]\nwait = \"18446744073709551s\"\n",
    "\n[[steps]]\nuser = { tokens = 20000000 }\n",
    "{}",
    "[]",
    "\"\\n\"",
    ",",
    "\u{0}",
];

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            // Replace a number-like run (or any short run) by an interesting value.
            0 | 1 => {
                let end = (at + 1 + rng.below(8)).min(v.len());
                let with = INTERESTING[rng.below(INTERESTING.len())].as_bytes();
                v.splice(at.min(end)..end, with.iter().copied());
            }
            2 => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 => {
                // Duplicate a chunk (repeats steps, lines, records).
                let end = (at + rng.below(512)).min(v.len());
                let chunk = v[at.min(end)..end].to_vec();
                v.splice(at..at, chunk);
            }
            4 => {
                if !v.is_empty() {
                    let i = rng.below(v.len());
                    v[i] ^= 1 << rng.below(8);
                }
            }
            _ => {
                let digit = b'0' + rng.below(10) as u8;
                v.insert(at, digit);
            }
        }
    }
    v
}

fn files(dir: &str, ext: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn iterations() -> usize {
    std::env::var("PLANCACHE_MUTATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
}

fn replay(target: &str, seeds: &[Vec<u8>], run: fn(&[u8])) {
    let mut rng = Rng(0x5eed ^ target.len() as u64);
    for seed in seeds {
        run(seed);
        for _ in 0..iterations() {
            let input = mutate(seed, &mut rng);
            let outcome = std::panic::catch_unwind(|| run(&input));
            if outcome.is_err() {
                panic!(
                    "{target} panicked on this input:\n{}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
    }
}

fn read(paths: &[std::path::PathBuf]) -> Vec<Vec<u8>> {
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

#[test]
fn scenario_corpus_mutated() {
    let mut seeds = files("scenarios", "toml");
    seeds.extend(files("tests/fixtures", "toml"));
    // The small fixtures replay quickly: mutate those, and load (not mutate) the large ones once.
    let (small, large): (Vec<_>, Vec<_>) = read(&seeds).into_iter().partition(|s| s.len() < 4000);
    for s in &large {
        harness::scenario(s);
    }
    replay("scenario", &small, harness::scenario);
}

#[test]
fn import_corpus_mutated() {
    let all = files("tests/fixtures/transcripts", "jsonl");
    let (codex, claude): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|p| p.to_string_lossy().contains("codex"));
    replay(
        "import_claude_code",
        &read(&claude),
        harness::import_claude_code,
    );
    replay("import_codex", &read(&codex), harness::import_codex);
}

#[test]
fn config_pricing_corpus_mutated() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pricing = std::fs::read_to_string(root.join("data/pricing.toml")).unwrap();
    let config = "[anthropic]\nlayout = \"claude-code\"\nsystem_ttl = \"1h\"\nlookback = 20\nmax_breakpoints = 4\nmin_cacheable = 1024\n[openai]\nmin_tokens = 1024\nincrement = 128\nidle_ttl = \"10m\"\n[paged]\nblock_size = 16\n";
    let seeds = vec![
        format!("{config}\n---\n").into_bytes(),
        format!("\n---\n{}", &pricing[..pricing.len().min(1500)]).into_bytes(),
    ];
    replay("config_pricing", &seeds, harness::config_pricing);
}

#[test]
fn baseline_corpus_mutated() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let seeds: Vec<Vec<u8>> = ["all-caches/summary.csv", "report/summary.csv"]
        .iter()
        .filter_map(|p| std::fs::read(root.join(p)).ok())
        .collect();
    assert!(!seeds.is_empty(), "no bundled summary.csv under results/");
    replay("baseline", &seeds, harness::baseline);
}

#[test]
fn sweep_corpus_mutated() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds = read(&files("sweeps", "toml"));
    if let (Some(first), Ok(csv)) = (
        seeds.first().cloned(),
        std::fs::read_to_string(root.join("results/sweep/sweep.csv")),
    ) {
        let mut s = first;
        s.extend_from_slice(b"\n---\n");
        s.extend_from_slice(
            csv.lines()
                .take(6)
                .collect::<Vec<_>>()
                .join("\n")
                .as_bytes(),
        );
        seeds.push(s);
    }
    replay("sweep", &seeds, harness::sweep);
}

#[test]
fn requests_corpus_mutated() {
    // The small cassettes and the claude-trace worked example (the large cassettes are read once).
    let mut seeds = files(
        "tests/fixtures/raw-requests/pydantic-ai/openrouter_test_cache",
        "yaml",
    );
    seeds.extend(files(
        "tests/fixtures/raw-requests/pydantic-ai/test_anthropic",
        "yaml",
    ));
    seeds.extend(files("tests/fixtures/raw-requests", "jsonl"));
    let (small, large): (Vec<_>, Vec<_>) = read(&seeds).into_iter().partition(|s| s.len() < 6000);
    assert!(!small.is_empty(), "no small raw-request seed");
    for s in &large {
        harness::requests(s);
    }
    replay("requests", &small, harness::requests);
}

#[test]
fn trace_corpus_mutated() {
    // The smallest bundled kv-cache-tester trace (8 requests), and one Mooncake line.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let small =
        std::fs::read(root.join("tests/fixtures/traces/kv-cache-tester/traces/trace_0057.json"))
            .unwrap();
    let mooncake =
        br#"{"timestamp": 0, "input_length": 1200, "output_length": 40, "hash_ids": [1, 2, 3]}
{"timestamp": 500, "input_length": 1400, "output_length": 10, "hash_ids": [1, 2, 4]}
"#
        .to_vec();
    replay("trace", &[small, mooncake], harness::trace);
}

#[test]
fn params_corpus_mutated() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenario = std::fs::read_to_string(root.join("scenarios/ttl-keepalive.toml")).unwrap();
    let seeds: Vec<Vec<u8>> = [
        "model=claude-opus-4-6\ntiming.human=4m".to_string(),
        format!("system[1].tokens=9000\nsteps[2].user.tokens=300\n---\n{scenario}"),
        format!("tools[1].tokens=250\nsteps[3].assistant.tokens=90\n---\n{scenario}"),
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    replay("params", &seeds, harness::params);
}

/// Fuzz finding (`requests`, 2026-12-03, sanitizer-free build): a cassette interaction whose
/// request body was not recognised (its `body` key mangled) and whose response bills
/// 1,999,999,999,111 cached tokens had a segment of that many synthetic token ids laid out
/// before anything checked the figure (8 GB within 40 s, then the allocator's limit). A bill is
/// now held to the session token budget before layout, and the log's distinct content after
/// each request: exit 2 naming the interaction, at once.
#[test]
fn request_log_billing_past_the_token_budget_is_refused_before_layout() {
    let cassette = |reads: &[u64]| {
        let mut y = String::from("interactions:\n");
        for r in reads {
            y.push_str(&format!(
                "- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n  \
                 response:\n    parsed_body:\n      type: message\n      usage:\n        \
                 input_tokens: 3\n        cache_read_input_tokens: {r}\n        \
                 cache_creation_input_tokens: 0\n        output_tokens: 9\n"
            ));
        }
        y
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.yaml");
    let explain = |text: String, limit: &str| {
        std::fs::write(&log, text).unwrap();
        let started = std::time::Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
            .args([
                "explain",
                log.to_str().unwrap(),
                "--max-session-tokens",
                limit,
            ])
            .output()
            .unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = explain(cassette(&[1_000, 1_999_999_999_111]), "25000000");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("interaction 2")
            && err.contains("prompt is 1999999999114 tokens")
            && err.contains("above the session limit of 25000000")
            && err.contains("--max-session-tokens"),
        "{err}"
    );
    // The first interaction alone reads.
    let (code, err) = explain(cassette(&[1_000]), "25000000");
    assert_eq!(code, Some(0), "{err}");
    // Interactions each under the limit whose distinct content together passes it: refused at
    // the one where it does (150,003 distinct tokens each against 1,000,000).
    let (code, err) = explain(cassette(&[150_000; 10]), "1000000");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("interaction 7")
            && err.contains("distinct content reaches 1050021 tokens")
            && err.contains("limit of 1000000"),
        "{err}"
    );
}
