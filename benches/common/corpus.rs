//! A deterministic tokenizer corpus: prose, source code and JSON, generated from a seed.
//!
//! Nothing is copied from anywhere: sentences, functions and records are assembled from small
//! self-written word lists with a splitmix64 generator, so every run (and the Python comparison
//! script, through `examples/write_corpus.rs`) sees the same bytes.

/// splitmix64: tiny, fast, good enough for picking words.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[(self.next() % words.len() as u64) as usize]
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NOUNS: &[&str] = &[
    "cache", "request", "planner", "session", "token", "prefix", "model", "harness", "reviewer",
    "engine", "block", "window", "user", "agent", "budget", "latency", "tool", "prompt", "file",
    "test", "module", "branch", "queue", "server", "schema", "record", "report", "chart",
];
const VERBS: &[&str] = &[
    "reads",
    "writes",
    "keeps",
    "breaks",
    "moves",
    "measures",
    "replays",
    "checks",
    "drops",
    "expands",
    "rewrites",
    "explains",
    "shares",
    "invalidates",
    "approves",
    "compares",
];
const ADJS: &[&str] = &[
    "stable", "long", "short", "cached", "fresh", "quiet", "careful", "costly", "cheap", "early",
    "late", "shared", "private", "whole", "partial", "slow", "fast", "plain",
];
const IDENTS: &[&str] = &[
    "count",
    "total",
    "prefix_len",
    "blocks",
    "entry",
    "index",
    "hits",
    "misses",
    "ttl_ms",
    "segments",
    "tokens",
    "offset",
    "budget",
    "limit",
    "state",
    "mode",
    "plan",
    "result",
];

/// About `bytes` of English-like prose.
pub fn prose(seed: u64, bytes: usize) -> String {
    let mut r = Rng::new(seed);
    let mut s = String::with_capacity(bytes + 200);
    while s.len() < bytes {
        let n = 6 + r.below(14);
        let mut sentence = format!("The {} {}", r.pick(ADJS), r.pick(NOUNS));
        for i in 0..n {
            let w = match i % 4 {
                0 => r.pick(VERBS),
                1 => "the",
                2 => r.pick(ADJS),
                _ => r.pick(NOUNS),
            };
            sentence.push(' ');
            sentence.push_str(w);
        }
        if r.below(5) == 0 {
            sentence.push_str(&format!(
                ", about {} times in {} ms",
                r.below(10_000),
                r.below(900)
            ));
        }
        s.push_str(&sentence);
        s.push_str(if r.below(6) == 0 { ".\n\n" } else { ". " });
    }
    s
}

/// About `bytes` of Rust-like source code.
pub fn code(seed: u64, bytes: usize) -> String {
    let mut r = Rng::new(seed);
    let mut s = String::with_capacity(bytes + 400);
    let mut f = 0;
    while s.len() < bytes {
        f += 1;
        let (a, b, c) = (r.pick(IDENTS), r.pick(IDENTS), r.pick(IDENTS));
        s.push_str(&format!(
            "/// Returns the {adj} {noun} for one {n2}.\npub fn {a}_{f}(input: &[u32], {b}: usize) -> Result<u64, String> {{\n    let mut {c} = 0u64;\n    for (i, value) in input.iter().enumerate() {{\n        if i % {m} == 0 && *value > {k} {{\n            {c} += u64::from(*value) * {mul};\n        }} else {{\n            {c} = {c}.saturating_sub({b} as u64);\n        }}\n    }}\n    if {c} == 0 {{\n        return Err(format!(\"no {noun} in {{}} items\", input.len()));\n    }}\n    Ok({c})\n}}\n\n",
            adj = r.pick(ADJS),
            noun = r.pick(NOUNS),
            n2 = r.pick(NOUNS),
            m = 2 + r.below(7),
            k = r.below(1000),
            mul = 1 + r.below(31),
        ));
    }
    s
}

/// About `bytes` of JSON tool results.
pub fn json(seed: u64, bytes: usize) -> String {
    let mut r = Rng::new(seed);
    let mut s = String::with_capacity(bytes + 300);
    s.push_str("[\n");
    let mut first = true;
    while s.len() < bytes {
        if !first {
            s.push_str(",\n");
        }
        first = false;
        s.push_str(&format!(
            "  {{\"id\": {}, \"{}\": \"{} {}\", \"{}\": {}, \"{}\": {:.3}, \"tags\": [\"{}\", \"{}\"], \"ok\": {}}}",
            r.below(1_000_000),
            r.pick(IDENTS),
            r.pick(ADJS),
            r.pick(NOUNS),
            r.pick(IDENTS),
            r.below(100_000),
            r.pick(IDENTS),
            r.below(1_000_000) as f64 / 997.0,
            r.pick(NOUNS),
            r.pick(VERBS),
            r.below(2) == 0
        ));
    }
    s.push_str("\n]\n");
    s
}

/// The three corpus parts, each about `bytes_each` long.
pub fn corpus(bytes_each: usize) -> Vec<(&'static str, String)> {
    vec![
        ("prose", prose(1, bytes_each)),
        ("code", code(2, bytes_each)),
        ("json", json(3, bytes_each)),
    ]
}
