//! `compare --quiet / --json / --allow-missing`, limits echoed as given, and the gate (and
//! `merge`) refusing doubtful figures: duplicate rows or keys naming both places, and figures no
//! replay can produce.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("binary runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const AUTH: &str = "scenarios/auth-plan.toml";

/// A baseline of auth-plan under masked and toolset-swap: 2 points (summary.csv and run.json).
fn baseline(dir: &Path) -> PathBuf {
    let b = dir.join("base");
    let o = run(&[
        "run",
        AUTH,
        "--strategy",
        "masked,toolset-swap",
        "--format",
        "json",
        "--out",
        b.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    b
}

#[test]
fn quiet_prints_the_verdict_and_json_the_outcome_with_limits_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let b = baseline(dir.path());
    let csv = b.join("summary.csv");
    let base = csv.to_str().unwrap();
    let common = [
        "compare",
        AUTH,
        "--baseline",
        base,
        "--strategy",
        "masked,toolset-swap",
    ];
    // 2 points x 3 limits (hit rate, cost, TTFT) = 6 checks, all equal: one line.
    let mut args = common.to_vec();
    args.extend(["--quiet", "--max-hit-rate-drop", "1%"]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(
        out(&o),
        format!("plancache compare: passed (6 check(s), 0 violation(s)) against {base}\n")
    );
    // The Markdown echoes `1%` and `5%` as written, not 0.01.
    let mut args = common.to_vec();
    args.extend(["--max-hit-rate-drop", "1%", "--max-cost-increase", "5%"]);
    let md = out(&run(&args));
    assert!(
        md.contains("Limits: hit-rate drop 1%, cost increase 5%, TTFT increase 0."),
        "{md}"
    );
    // --json: the verdict, the limits as given, every check.
    let mut args = common.to_vec();
    args.extend(["--json", "--max-hit-rate-drop", "1%"]);
    let o = run(&args);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON only");
    assert_eq!(v["passed"], true);
    assert_eq!(v["violations"], 0);
    assert_eq!(v["limits"]["hit_rate_drop"], "1%");
    assert_eq!(v["checks"].as_array().unwrap().len(), 6);
    assert_eq!(v["checks"][0]["limit"], "1%");
}

#[test]
fn quiet_lists_each_violation_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let b = baseline(dir.path());
    // Lower the baseline's masked cost to 0.01: the current run's cost is a regression.
    let csv = std::fs::read_to_string(b.join("summary.csv")).unwrap();
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    let i = lines.iter().position(|l| l.contains(",masked,")).unwrap();
    let mut cells: Vec<String> = lines[i].split(',').map(String::from).collect();
    let current_cost: f64 = cells[10].parse().unwrap();
    cells[10] = "0.010000".into();
    lines[i] = cells.join(",");
    let doctored = dir.path().join("summary.csv");
    std::fs::write(&doctored, lines.join("\n") + "\n").unwrap();
    let o = run(&[
        "compare",
        AUTH,
        "--baseline",
        doctored.to_str().unwrap(),
        "--strategy",
        "masked,toolset-swap",
        "--quiet",
        "--max-cost-increase",
        "10%",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    // +(current - 0.01), as a percent of 0.01; the limit as given.
    let want = format!(
        "FAIL auth-plan / masked / anthropic: cost $ 0.010000 -> {current_cost:.6} ({:+.6} ({:+.1}%)), limit 10%",
        current_cost - 0.01,
        (current_cost - 0.01) / 0.01 * 100.0
    );
    assert_eq!(lines[0], want);
    assert!(
        lines[1].starts_with("plancache compare: FAILED (6 check(s), 1 violation(s))"),
        "{text}"
    );
}

#[test]
fn allow_missing_gates_a_subset_of_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let b = baseline(dir.path());
    let base = b.join("summary.csv");
    let args = [
        "compare",
        AUTH,
        "--baseline",
        base.to_str().unwrap(),
        "--strategy",
        "masked",
    ];
    // toolset-swap is in the baseline, not in this run: one violation...
    let o = run(&args);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o)
        .contains("### Missing from the current run\n\n- auth-plan / toolset-swap / anthropic"));
    // ...unless allowed: listed, not a violation (1 point x 3 checks).
    let mut a = args.to_vec();
    a.extend(["--allow-missing", "--quiet"]);
    let o = run(&a);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        out(&o).contains("(3 check(s), 0 violation(s), 1 baseline point(s) not run (allowed))"),
        "{}",
        out(&o)
    );
}

fn compare_with(baseline: &Path) -> Output {
    run(&[
        "compare",
        AUTH,
        "--baseline",
        baseline.to_str().unwrap(),
        "--strategy",
        "masked,toolset-swap",
    ])
}

#[test]
fn duplicate_rows_and_keys_name_both_places() {
    let dir = tempfile::tempdir().unwrap();
    let b = baseline(dir.path());
    // summary.csv: the masked row again at the end (line 4; it was line 2 or 3).
    let csv = std::fs::read_to_string(b.join("summary.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    let i = lines.iter().position(|l| l.contains(",masked,")).unwrap();
    let doubled = dir.path().join("summary.csv");
    std::fs::write(&doubled, format!("{csv}{}\n", lines[i])).unwrap();
    let o = compare_with(&doubled);
    assert_eq!(o.status.code(), Some(2));
    let p = doubled.display();
    assert!(
        err(&o).contains(&format!(
            "{p}:{} and {p}:4: two rows for auth-plan / masked / anthropic",
            i + 1
        )),
        "{}",
        err(&o)
    );
    // A column twice.
    let twice = dir.path().join("twice.csv");
    let header = lines[0].replace("cost_usd", "cost_usd,cost_usd");
    let body: Vec<String> = lines[1..]
        .iter()
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            format!("{},{},{}", c[..11].join(","), c[10], c[11..].join(","))
        })
        .collect();
    std::fs::write(&twice, format!("{header}\n{}\n", body.join("\n"))).unwrap();
    let o = compare_with(&twice);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("column `cost_usd` is given twice (columns 11 and 12)"),
        "{}",
        err(&o)
    );
    // run.json: a `cost_usd` key twice in one summary object (the later, tripled, would win).
    let json = std::fs::read_to_string(b.join("run.json")).unwrap();
    let at = json.find("\"cost_usd\"").unwrap();
    let line_of = |off: usize| json[..off].matches('\n').count() + 1;
    let doubled_key = format!("{}\"cost_usd\": 3.0,\n      {}", &json[..at], &json[at..]);
    let jp = dir.path().join("run.json");
    std::fs::write(&jp, &doubled_key).unwrap();
    let o = compare_with(&jp);
    assert_eq!(o.status.code(), Some(2));
    // The inserted key is on the original key's line; the original moves one line down.
    let l = line_of(at);
    assert!(
        err(&o).contains(&format!(
            "line {l} and line {}: `cost_usd` is given twice in summary[0]",
            l + 1
        )),
        "{}",
        err(&o)
    );
    // run.json: a summary row twice.
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let first = v["summary"][0].clone();
    v["summary"].as_array_mut().unwrap().push(first);
    let text = serde_json::to_string_pretty(&v).unwrap();
    std::fs::write(&jp, &text).unwrap();
    let o = compare_with(&jp);
    assert_eq!(o.status.code(), Some(2));
    // summary[0] is named by the line of its first key: the first `"` after the `{` that
    // follows `"summary"`.
    let s = text.find("\"summary\"").unwrap();
    let brace = s + text[s..].find('{').unwrap();
    let key = brace + text[brace..].find('"').unwrap();
    let l = text[..key].matches('\n').count() + 1;
    let e = err(&o);
    assert!(
        e.contains(&format!("{}:{l} and {}:", jp.display(), jp.display()))
            && e.contains("two rows for auth-plan / masked / anthropic"),
        "{e}"
    );
}

#[test]
fn figures_no_replay_can_produce_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let b = baseline(dir.path());
    let csv = std::fs::read_to_string(b.join("summary.csv")).unwrap();
    // cost_usd is column 11; hit_rate column 10.
    for (col, bad, want) in [
        (10, "1e30", "is more than"),
        (10, "1e308", "is more than"),
        (10, "-0.5", "is negative"),
        (10, "NaN", "is not a number"),
        (10, "-inf", "is infinite"),
        (10, "", "is not a number"),
        (9, "1.5", "hit_rate 1.5 is above 1"),
    ] {
        let mut lines: Vec<String> = csv.lines().map(String::from).collect();
        let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
        cells[col] = bad.to_string();
        lines[1] = cells.join(",");
        let p = dir.path().join("summary.csv");
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let o = compare_with(&p);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", err(&o));
        assert!(err(&o).contains(want), "{bad}: {}", err(&o));
        // The same file as the current figures.
        let o = run(&[
            "compare",
            "--baseline",
            b.join("summary.csv").to_str().unwrap(),
            "--current",
            p.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "current {bad}: {}", err(&o));
    }
    // A cost a replay can produce passes the check: the baseline itself.
    assert_eq!(compare_with(&b.join("summary.csv")).status.code(), Some(0));
}

const SHARD_HEADER: &str = "point,scenario,strategy,cache,requests,prompt_tokens,cached_tokens,cache_write_tokens,recomputed_tokens,output_tokens,hit_rate,cost_usd,ttft_ms";

fn merge(dir: &Path, rows: &[&str]) -> Output {
    let shards = dir.join("shards");
    std::fs::create_dir_all(&shards).unwrap();
    let p = shards.join("shard-1-of-1.csv");
    std::fs::write(&p, format!("{SHARD_HEADER}\n{}\n", rows.join("\n"))).unwrap();
    run(&[
        "merge",
        p.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
    ])
}

#[test]
fn merge_refuses_doubtful_figures_and_names_both_places_of_a_point() {
    let dir = tempfile::tempdir().unwrap();
    let good = "1,s,permission-mode,anthropic,4,1000,500,500,500,40,0.5000,0.012345,900.0";
    let o = merge(
        dir.path(),
        &[
            good,
            "2,s,toolset-swap,anthropic,4,1000,0,1000,1000,40,0.0000,0.020000,950.0",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    for (bad, want) in [
        ("-inf", "is infinite"),
        ("NaN", "is not a number"),
        ("-0.02", "is negative"),
        ("", "is not a number"),
        ("1e30", "is more than 4 request(s) can cost"),
    ] {
        let row = format!("2,s,toolset-swap,anthropic,4,1000,0,1000,1000,40,0.0000,{bad},950.0");
        let o = merge(dir.path(), &[good, &row]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", err(&o));
        let e = err(&o);
        assert!(
            e.contains("shard-1-of-1.csv:3") && e.contains(want),
            "{bad}: {e}"
        );
    }
    // Point 1 twice: both lines named.
    let o = merge(dir.path(), &[good, good]);
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("shard-1-of-1.csv:2 and ")
            && e.contains("shard-1-of-1.csv:3: both hold point 1"),
        "{e}"
    );
}
