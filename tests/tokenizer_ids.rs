//! plancache's optional fast tokenizer (bpe-openai, feature `fast-bpe`; `.ci/run` runs this file
//! with it) gives exactly the ids of
//! tiktoken-rs (itself byte-identical to Python's tiktoken, /work/shared/RUST_NOTES.md) on the
//! benchmark corpus, on every string of two real transcripts and on the corner cases of the
//! pre-tokenizing patterns (contractions, digit runs, whitespace runs, non-Latin scripts).
//! Without `fast-bpe` (the default build) it checks tiktoken-rs against itself.

#[path = "../benches/common/corpus.rs"]
mod corpus;

use plancache::prompt::{Encoding, Tokenizer};

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

#[test]
fn real_transcript_strings_match_tiktoken() {
    let mut texts = strings_of("tests/fixtures/real/claude-code/tracelab/claude-session-01.jsonl");
    texts.extend(strings_of(
        "tests/fixtures/real/codex/tracelab/sessions/2026/03/21/rollout-2026-03-21T10-05-38-01a7c9e4-6d12-7b3a-9f42-8c6d5e1a0b73.jsonl",
    ));
    // Two transcripts of real sessions: hundreds of strings (the exact count is not the point;
    // a reader that found none would check nothing).
    assert!(texts.len() > 300, "{} strings", texts.len());
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
    ];
    let texts: Vec<String> = cases.iter().map(|s| s.to_string()).collect();
    assert_same_ids(&texts, "corner case");
}
