//! plancache's tokenizer gives exactly the ids of tiktoken-rs (itself byte-identical to Python's
//! tiktoken, /work/shared/RUST_NOTES.md), whichever backend the build uses: its own scanner (the
//! default, feature `scanner`), bpe-openai (`fast-bpe`; `.ci/run` runs this file with it) or
//! tiktoken-rs itself (`--no-default-features --features tiktoken`, where this checks tiktoken-rs
//! against itself). Checked on the benchmark corpus, on every distinct string of the real
//! transcripts in tests/fixtures/real, on the corner cases of the split patterns (contractions,
//! digit runs, whitespace runs, non-Latin scripts) and on random strings built from the
//! characters hand-written pre-tokenizers get wrong.

#[path = "../benches/common/corpus.rs"]
mod corpus;

use plancache::prompt::{Encoding, Tokenizer};
use proptest::prelude::*;

fn encoders() -> [(Encoding, &'static tiktoken_rs::CoreBPE); 2] {
    [
        (Encoding::O200kBase, tiktoken_rs::o200k_base_singleton()),
        (Encoding::Cl100kBase, tiktoken_rs::cl100k_base_singleton()),
    ]
}

fn assert_same_ids(texts: &[String], what: &str) {
    for (enc, tik) in encoders() {
        let ours = Tokenizer::new(enc);
        for (i, text) in texts.iter().enumerate() {
            let a = ours.encode_uncached(text);
            let b = tik.encode_ordinary(text);
            assert!(
                a == b,
                "{what} #{i} ({enc:?}, {} bytes): {} differs from tiktoken-rs\n{:?}",
                text.len(),
                Tokenizer::backend(),
                text.chars().take(200).collect::<String>()
            );
        }
    }
}

#[test]
fn corpus_ids_match_tiktoken() {
    // 60 KB of each part (prose, code, JSON): tiktoken-rs runs at about 1 MB/s in debug builds.
    let texts: Vec<String> = corpus::corpus(60_000).into_iter().map(|(_, t)| t).collect();
    assert_eq!(texts.len(), 3);
    assert_same_ids(&texts, "corpus part");
}

/// Every string value of a JSONL file (messages, tool inputs and results, metadata).
fn strings_of(path: &str) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) if !s.is_empty() => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).expect("fixture exists");
    let mut out = Vec::new();
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            walk(&v, &mut out);
        }
    }
    out
}

/// Every `.jsonl` file under `dir`, sorted.
fn jsonl_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("fixture folder exists")
        .map(|e| e.expect("readable folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            jsonl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

#[test]
fn real_transcript_strings_match_tiktoken() {
    // Every distinct string of every real transcript (Claude Code and Codex, 29 files):
    // messages, tool inputs and results (code, JSON, diffs, logs), metadata.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real");
    let mut files = Vec::new();
    jsonl_files(&root, &mut files);
    assert!(files.len() >= 20, "{} transcripts", files.len());
    let mut seen = std::collections::HashSet::new();
    let mut texts = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .expect("under the crate");
        for s in strings_of(&rel.to_string_lossy()) {
            if seen.insert(s.clone()) {
                texts.push(s);
            }
        }
    }
    // Thousands of strings (the exact count is not the point; a reader that found none would
    // check nothing).
    assert!(texts.len() > 1_000, "{} strings", texts.len());
    assert_same_ids(&texts, "transcript string");
}

#[test]
fn pre_tokenizer_corner_cases_match_tiktoken() {
    let cases = [
        "",
        " ",
        "   \n\n\t  \r\n",
        "I'm sure they'll say it's what we'd done; THEY'LL, YOU'RE, 'S'",
        "1234567890 12 345 6789 3.14159 1e-9 0x7fff_ffff",
        "日本語のテキストと中文文本，还有한국어 텍스트。",
        "emoji 🙂🚀👩‍👩‍👧 and combining é vs é",
        "Ελληνικά, русский текст, עברית, العربية",
        "fn main() {\n    let x = vec![1, 2, 3];\n\n\n    println!(\"{x:?}\");\n}\n",
        "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\\n\\te\"}",
        "trailing spaces    ",
        "CamelCaseWordsAndsnake_case_words and kebab-case-words",
        "<|endoftext|> is special but encoded as ordinary text",
        // Runs of spaces before a newline, \r\n, a trailing run, tabs and other \s.
        "a  \n  b\r\n\r\n   \t\n\u{0B}\u{0C}x\u{85}y\u{A0}z\u{3000}\u{2028} ",
        // Contractions in every case, `ſ` (folds to `s`), a contraction without a word before.
        "it'S we'Ll they'RE it'\u{17F} \u{17F}'s 's 't 'LL 'Ve 're'm'd 'x ''s",
        // Digits in groups of three, other scripts' digits, numbers within words.
        "12345678 ١٢٣٤ ½⅓ Ⅻ a1b22c333d4444",
        // Marks alone, after spaces and punctuation; title case and modifier letters.
        "\u{301}a \u{301}ABc (\u{308}x) ǅungla ʰello Ǆ中\u{301}文",
        // Punctuation runs ending in newlines and slashes (o200k keeps `[\r\n/]*`).
        "a!!\n\n/b ?//\r\n// -->\n",
    ];
    let texts: Vec<String> = cases.iter().map(|s| s.to_string()).collect();
    assert_same_ids(&texts, "corner case");
}

/// Fragments that break hand-written pre-tokenizers: whitespace of every kind, contractions,
/// digits, CJK, combining marks, emoji (with joiners and variation selectors), title case and
/// modifier letters, `ſ`, slashes and apostrophes.
const FRAGMENTS: &[&str] = &[
    " ",
    "  ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "\u{0B}",
    "\u{85}",
    "\u{A0}",
    "\u{2028}",
    "\u{3000}",
    "'s",
    "'S",
    "'ll",
    "'LL",
    "'ve",
    "'Re",
    "'m",
    "'d",
    "'t",
    "'",
    "\u{17F}",
    "don't",
    "I'M",
    "0",
    "12",
    "345",
    "6789",
    "١٢",
    "½",
    "Ⅻ",
    "中文",
    "日本",
    "한국어",
    "\u{301}",
    "\u{308}",
    "é",
    "É",
    "ß",
    "ǅ",
    "ʰ",
    "ﬁ",
    "İ",
    "ı",
    "Ω",
    "🙂",
    "👩\u{200D}👩\u{200D}👧",
    "❤\u{FE0F}",
    "a",
    "z",
    "A",
    "Z",
    "word",
    "Word",
    "WORD",
    "camelCase",
    "HTTPServer",
    "snake_case",
    "/",
    "//",
    "!",
    ".",
    ",",
    "-",
    "_",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ":",
    ";",
    "\"",
    "=>",
    "<|endoftext|>",
    "\u{1D400}",
    "\u{10FFFF}",
    "\u{E000}",
];

/// A random string: fragments above and arbitrary characters, up to 40 pieces.
fn tricky_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => prop::sample::select(FRAGMENTS).prop_map(str::to_string),
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_tricky_strings_match_tiktoken(text in tricky_text()) {
        for (enc, tik) in encoders() {
            let ours = Tokenizer::new(enc).encode_uncached(&text);
            prop_assert_eq!(ours, tik.encode_ordinary(&text), "{:?} {:?}", enc, text);
        }
    }
}
