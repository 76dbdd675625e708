//! `plancache run LOG` / `report LOG`: the log as sent (`as-sent`) is the reference row, every
//! design gets its saving against it, and the report carries `explain`'s per-request view.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const WORKED: &str = "tests/fixtures/raw-requests/worked-example.jsonl";
const CASSETTE: &str = "tests/fixtures/raw-requests/pydantic-ai/openrouter_test_cache/test_openrouter_cache_messages_anthropic_real_api.yaml";
const WARM: &str =
    "tests/fixtures/raw-requests/pydantic-ai/test_anthropic/test_anthropic_cache_real_api.yaml";

fn plancache(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = plancache(args);
    assert_eq!(code, 0, "{err}");
    out
}

/// summary.csv rows by strategy: (requests, prompt, cached, written, output, cost).
fn summary(csv: &str, strategy: &str) -> (u64, u64, u64, u64, u64, f64) {
    let line = csv
        .lines()
        .find(|l| l.split(',').nth(1) == Some(strategy))
        .unwrap_or_else(|| panic!("no {strategy} row in\n{csv}"));
    let c: Vec<&str> = line.split(',').collect();
    let n = |i: usize| c[i].parse::<u64>().unwrap();
    (n(3), n(4), n(5), n(6), n(8), c[10].parse().unwrap())
}

#[test]
fn worked_example_as_sent_is_the_bill_and_each_design_saves_against_it() {
    let csv = ok(&[
        "run",
        WORKED,
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode,frozen-tools,system-message",
        "--export-csv",
        "-",
    ]);
    // As sent (claude-sonnet-4-5: input $3, 5m write $3.75, 1h write $6, read $0.30, output
    // $15 per million). Reads 0 + 6,000 + 5,900 + 5,900 = 17,800 and writes 6,000 + 900 +
    // 1,180 + 1,210 = 9,290, the billed sums; request 1's 5,900 tokens of tools and static
    // system prompt are its 1 h mark's, the other 3,390 5-minute writes. Output: the replies
    // 47 + 119 + 32 + 60 = 258. Cost: 17,800 × 0.30 + 5,900 × 6 + 3,390 × 3.75 + 258 × 15 =
    // 5,340 + 35,400 + 12,712.5 + 3,870 = 57,322.5 per million = $0.057322.
    let (reqs, prompt, cached, written, output, cost) = summary(&csv, "as-sent");
    assert_eq!(
        (reqs, prompt, cached, written, output),
        (4, 27090, 17800, 9290, 258)
    );
    assert!((cost - 0.057322).abs() < 1e-6, "{cost}");
    // permission-mode and frozen-tools send what the harness sent (no plan mode, no tool
    // change): the same cost.
    for s in ["permission-mode", "frozen-tools"] {
        let (_, _, c, w, _, x) = summary(&csv, s);
        assert_eq!((c, w), (17800, 9290), "{s}");
        assert!((x - 0.057322).abs() < 1e-6, "{s}: {x}");
    }
    // system-message sends request 4's new date as a 48-token system message after request
    // 3's blocks instead of editing system[1]: it reads all 7,080 tokens request 3 wrote and
    // writes 30 + 48 = 78 (5m). Request 4 costs 7,080 × 0.30 + 78 × 3.75 + 60 × 15 =
    // 3,316.5 per million instead of 5,900 × 0.30 + 1,210 × 3.75 + 60 × 15 = 7,207.5: the
    // session costs $0.057322 − $0.003891 = $0.053431.
    let (_, prompt, cached, written, _, cost) = summary(&csv, "system-message");
    assert_eq!((prompt, cached, written), (27138, 18980, 8158));
    assert!((cost - 0.053431).abs() < 1e-6, "{cost}");

    // The table: as-sent is the reference, saving $ beside × cost.
    let table = ok(&[
        "run",
        WORKED,
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode,system-message",
    ]);
    let row = |s: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(s))
            .unwrap()
            .to_string()
    };
    assert!(
        row("as-sent").ends_with("1.00×         ref       ref"),
        "{table}"
    );
    assert!(
        row("system-message").ends_with("0.93×     +4.2 pt    0.0039"),
        "{table}"
    );
    assert!(
        row("permission-mode").ends_with("1.00×     +0.0 pt    0.0000"),
        "{table}"
    );
    assert!(table.contains("worked-example: system-message: 0.93× the cost of as-sent"));
}

#[test]
fn ttl_variant_is_priced_against_the_log_as_sent() {
    let csv = ok(&[
        "run",
        WORKED,
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode",
        "--ttl",
        "1h",
        "--export-csv",
        "-",
    ]);
    // --ttl changes the designs' marks, not the log as sent.
    let (_, _, cached, written, _, cost) = summary(&csv, "as-sent");
    assert_eq!((cached, written), (17800, 9290));
    assert!((cost - 0.057322).abs() < 1e-6);
    // Every mark 1 h: request 3 (7 minutes later) reads the 6,900 tokens request 2 left
    // (+1,000 read, −1,000 written), but all 9,290 − 1,000 = 8,290 writes cost $6: 18,800 ×
    // 0.30 + 8,290 × 6 + 258 × 15 = 5,640 + 49,740 + 3,870 = 59,250 per million, $0.001928
    // more than as sent.
    let (_, _, cached, written, _, cost) = summary(&csv, "permission-mode");
    assert_eq!((cached, written), (18800, 8290));
    assert!((cost - 0.059250).abs() < 1e-6, "{cost}");
}

#[test]
fn real_cassette_as_sent_reproduces_its_billed_usage() {
    // Billed (the cassette's two responses): read 0 then 3,211; written 3,211 then 115.
    let csv = ok(&[
        "run",
        CASSETTE,
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode",
        "--export-csv",
        "-",
    ]);
    let (reqs, _, cached, written, _, _) = summary(&csv, "as-sent");
    assert_eq!((reqs, cached, written), (2, 3211, 3326));
    let explain = ok(&["explain", CASSETTE, "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&explain).unwrap();
    let sum = |k: &str| -> u64 {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r[k].as_u64().unwrap())
            .sum()
    };
    assert_eq!((sum("billed_read"), sum("billed_write")), (cached, written));
}

#[test]
fn a_log_warm_before_it_began_is_replayed_cold_like_its_scenario() {
    // The first request read 1,111 tokens cached before the log; the scenario cannot say so,
    // so as-sent starts cold too: it writes the 1,111, and request 2 reads them and writes
    // 418, as permission-mode does.
    let csv = ok(&[
        "run",
        WARM,
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode",
        "--export-csv",
        "-",
    ]);
    let a = summary(&csv, "as-sent");
    let p = summary(&csv, "permission-mode");
    assert_eq!((a.2, a.3), (1111, 1529));
    assert_eq!((a.2, a.3, a.5), (p.2, p.3, p.5));
}

#[test]
fn reference_as_sent_is_refused_without_a_log_and_bad_logs_exit_2() {
    let (code, _, err) = plancache(&["run", "scenarios/exercise-3.toml", "--reference", "as-sent"]);
    assert_eq!(code, 2);
    assert!(err.contains("--reference as-sent"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.jsonl");
    std::fs::write(
        &bad,
        "{\"request\": {\"body\": {\"model\": \"claude-sonnet-4-5\"}}, \"response\": {}}\n",
    )
    .unwrap();
    let (code, _, err) = plancache(&["run", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("broken.jsonl") && err.contains("hint"),
        "{err}"
    );
}

#[test]
fn report_on_a_cassette_has_the_saving_and_explains_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("review");
    ok(&[
        "report",
        CASSETTE,
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode,system-message",
        "--out",
        out.to_str().unwrap(),
    ]);
    let explain = ok(&["explain", CASSETTE, "--json"]);
    let view = std::fs::read_to_string(
        out.join("explain/test_openrouter_cache_messages_anthropic_real_api.json"),
    )
    .unwrap();
    assert_eq!(view, explain);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let table = ok(&["explain", CASSETTE, "--format", "markdown"]);
    assert!(md.contains(&table), "{md}");
    assert!(md.contains("| as-sent | anthropic-auto | "), "{md}");
    assert!(md.contains("| ref | 1.00× |"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>The log as sent: "));
    assert!(html.contains("<td>3211</td>"));
    assert!(html.trim_end().ends_with("</html>"));
}
