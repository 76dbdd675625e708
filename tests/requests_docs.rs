//! docs/raw-requests.md's worked example: the `explain` table and the `run` rows are what the
//! commands print today.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn between<'a>(doc: &'a str, tag: &str) -> &'a str {
    let begin = format!("<!-- {tag}:begin -->\n");
    let end = format!("<!-- {tag}:end -->");
    let s = doc.find(&begin).unwrap() + begin.len();
    &doc[s..s + doc[s..].find(&end).unwrap()]
}

fn plancache(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn worked_example_tables_match_the_commands() {
    let doc = std::fs::read_to_string(root().join("docs/raw-requests.md")).unwrap();
    let log = "tests/fixtures/raw-requests/worked-example.jsonl";
    assert_eq!(
        between(&doc, "explain"),
        plancache(&["explain", log, "--format", "markdown"])
    );

    let dir = tempfile::tempdir().unwrap();
    let scen = dir.path().join("worked.toml");
    let ttl = dir.path().join("ttl1h.toml");
    std::fs::write(&ttl, "[anthropic-auto]\nmessage_ttl = \"1h\"\n").unwrap();
    plancache(&["import", "requests", log, "--out", scen.to_str().unwrap()]);
    let base = [
        "run",
        scen.to_str().unwrap(),
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode",
    ];
    let as_sent = plancache(&base);
    let mut with_ttl = base.to_vec();
    with_ttl.extend(["--cache-config", ttl.to_str().unwrap()]);
    let one_hour = plancache(&with_ttl);
    let expected = format!(
        "```\n{}{}```\n",
        as_sent,
        one_hour.lines().last().unwrap().to_string() + "\n"
    );
    assert_eq!(between(&doc, "run"), expected);
    // The log as sent: the sums of the billed reads (0 + 6,000 + 5,900 + 5,900) and writes
    // (6,000 + 900 + 1,180 + 1,210).
    assert!(as_sent.contains("   17800     9290"), "{as_sent}");
}

#[test]
fn saving_per_design_block_matches_the_commands() {
    let doc = std::fs::read_to_string(root().join("docs/raw-requests.md")).unwrap();
    let log = "tests/fixtures/raw-requests/worked-example.jsonl";
    let base = [
        "run",
        log,
        "--cache",
        "anthropic-auto",
        "--strategy",
        "permission-mode,frozen-tools,system-message",
    ];
    let mut ttl = base.to_vec();
    ttl.extend(["--ttl", "1h"]);
    let expected = format!("```\n{}{}```\n", plancache(&base), plancache(&ttl));
    assert_eq!(between(&doc, "designs"), expected);
}
