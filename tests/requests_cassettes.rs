//! The real pydantic-ai VCR cassettes (tests/fixtures/raw-requests/, MIT, see LICENSES/ and
//! SOURCES.tsv there): every recorded read and write reproduced by the exact replay, and the two
//! server-side compaction breaks named.

use std::path::PathBuf;

use plancache::cache::PriceTable;
use plancache::requests::{explain_file, Cause, ExplainRow};

fn explain(rel: &str) -> Vec<ExplainRow> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/raw-requests/pydantic-ai")
        .join(rel);
    explain_file(&path, None, &PriceTable::bundled())
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

/// (billed read, billed write, predicted read, predicted write) per row.
fn figures(rows: &[ExplainRow]) -> Vec<(u64, u64, u64, u64)> {
    rows.iter()
        .map(|r| {
            (
                r.billed_read.unwrap(),
                r.billed_write.unwrap(),
                r.predicted_read,
                r.predicted_write,
            )
        })
        .collect()
}

#[test]
fn anthropic_automatic_caching_is_reproduced() {
    // Top-level cache_control (automatic: the mark on the last block). Interaction 1 read 1,111
    // (the cassette was recorded after an earlier run: warm before the log), input 3; interaction
    // 2 appends a reply and a question: reads the 1,111 through the lookback, writes the 418
    // new tokens through its last block.
    let rows = explain("test_anthropic/test_anthropic_cache_real_api.yaml");
    assert_eq!(
        figures(&rows),
        vec![(1111, 0, 1111, 0), (1111, 418, 1111, 418)]
    );
    assert_eq!(rows[0].cause, Cause::First { warm: true });
    assert_eq!(rows[1].cause, Cause::None);
    assert_eq!(rows[1].prompt, 3 + 418 + 1111);
}

#[test]
fn count_tokens_calls_are_skipped() {
    let rows = explain("test_anthropic/test_anthropic_cache_count_tokens.yaml");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].place, "interaction 2");
    assert_eq!(figures(&rows), vec![(1111, 0, 1111, 0)]);
}

#[test]
fn bedrock_invoke_is_reproduced() {
    // Model from the URL (eu.anthropic.claude-haiku-4-5-20251001-v1:0), marks on content
    // blocks; the mark moves to the new last block and the read finds the old one.
    let rows = explain("test_anthropic/test_anthropic_cache_bedrock_real_api.yaml");
    assert_eq!(rows[0].model, "claude-haiku-4-5-20251001");
    assert_eq!(
        figures(&rows),
        vec![(9511, 0, 9511, 0), (9511, 1956, 9511, 1956)]
    );
}

#[test]
fn openrouter_chat_completions_are_reproduced() {
    // prompt_tokens 3,214 with cache_write_tokens 3,211, then cached_tokens 3,211 and 115
    // written. The first user message is a string in the second body and a marked text block in
    // the first: the same prompt, so one stream.
    let rows =
        explain("openrouter_test_cache/test_openrouter_cache_messages_anthropic_real_api.yaml");
    assert_eq!(
        figures(&rows),
        vec![(0, 3211, 0, 3211), (3211, 115, 3211, 115)]
    );
    assert_eq!(rows[1].stream, "main");
    assert_eq!(rows[0].model, "claude-sonnet-4-6");
}

#[test]
fn openrouter_small_prompts_are_below_the_minimum() {
    // 294 tokens with two marks (1h then 5m): below Sonnet 4.6's 2,048, nothing written.
    let rows =
        explain("openrouter_test_cache/test_openrouter_cache_point_multiple_markers_e2e.yaml");
    assert_eq!(figures(&rows), vec![(0, 0, 0, 0)]);
    assert_eq!(rows[0].prompt, 294);
    assert!(
        rows[0].detail.contains("below the model's minimum of 2048"),
        "{}",
        rows[0].detail
    );
}

#[test]
fn server_side_compaction_breaks_are_named() {
    // usage.iterations: a compaction pass over the sent 55,196 tokens (55,096 written, or read
    // in the streaming cassette recorded after it), then the reply pass on the server's summary:
    // 229 (181 streaming) tokens, read 0 — the two breaks count_breaks.py lists.
    for (file, first, pass) in [
        (
            "test_anthropic/test_anthropic_compaction_usage_with_cache.yaml",
            (0, 55096, 0, 55096),
            229,
        ),
        (
            "test_anthropic/test_anthropic_compaction_usage_with_cache_streaming.yaml",
            (55096, 0, 55096, 0),
            181,
        ),
    ] {
        let rows = explain(file);
        assert_eq!(rows.len(), 2, "{file}");
        assert_eq!(figures(&rows)[0], first, "{file}");
        assert_eq!(rows[0].prompt, 55196);
        assert_eq!(rows[1].cause, Cause::ServerCompaction, "{file}");
        assert_eq!(rows[1].prompt, pass);
        assert_eq!((rows[1].billed_read, rows[1].predicted_read), (Some(0), 0));
        assert!(rows[1].is_break, "{file}");
        assert!(!rows[0].is_break);
    }
}
