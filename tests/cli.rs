//! Drives the `plancache` binary: run, check, bad input and exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plancache"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scenario(name: &str) -> String {
    format!("scenarios/{name}.toml")
}

fn write_temp(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

const HEADER: &str = "name = \"bad\"\nmodel = \"claude-sonnet-4-5\"\nsystem = { tokens = 100 }\n[[tools]]\nname = \"Read\"\ntokens = 10\n[[tools]]\nname = \"ExitPlanMode\"\ntokens = 10\n";

#[test]
fn run_writes_both_csvs_with_the_contract_headers() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "run",
        &scenario("exercise-3"),
        "--strategy",
        "toolset-swap,permission-mode",
        "--cache",
        "ideal",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = std::fs::read_to_string(dir.path().join("requests.csv")).unwrap();
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert!(requests.starts_with("scenario,strategy,cache,request,step,mode,model,prompt_tokens,cached_tokens,cache_write_tokens,recomputed_tokens,output_tokens,hit_rate,cost_usd,ttft_ms,break_reason"));
    assert_eq!(
        summary.lines().next().unwrap(),
        "scenario,strategy,cache,requests,prompt_tokens,cached_tokens,cache_write_tokens,recomputed_tokens,output_tokens,hit_rate,cost_usd,ttft_ms,pings,ping_prompt_tokens,ping_cost_usd,compactions,compaction_prompt_tokens,compaction_cost_usd"
    );
    // Invariants on every row: cached + recomputed == prompt, write <= recomputed, 0 <= hit <= 1.
    let mut rdr = csv::Reader::from_reader(requests.as_bytes());
    let mut rows = 0;
    for rec in rdr.records() {
        let rec = rec.unwrap();
        let n = |i: usize| rec[i].parse::<u64>().unwrap();
        let (prompt, cached, write, recomputed) = (n(7), n(8), n(9), n(10));
        assert_eq!(cached + recomputed, prompt);
        assert!(write <= recomputed);
        let hit: f64 = rec[12].parse().unwrap();
        assert!((0.0..=1.0).contains(&hit));
        rows += 1;
    }
    assert_eq!(rows, 16, "8 requests x 2 strategies");
    // permission-mode's session hit rate beats toolset-swap's.
    let mut s = csv::Reader::from_reader(summary.as_bytes());
    let hits: Vec<(String, f64)> = s
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[1].to_string(), r[9].parse().unwrap())
        })
        .collect();
    let hit = |name: &str| hits.iter().find(|(s, _)| s == name).unwrap().1;
    assert!(hit("permission-mode") > hit("toolset-swap"));
}

#[test]
fn two_runs_give_byte_identical_outputs() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for d in [&a, &b] {
        let out = run(&[
            "run",
            &scenario("auth-plan"),
            &scenario("exercise-3"),
            "--format",
            "json",
            "--out",
            d.path().to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    for f in ["requests.csv", "summary.csv", "run.json"] {
        assert_eq!(
            std::fs::read(a.path().join(f)).unwrap(),
            std::fs::read(b.path().join(f)).unwrap(),
            "{f} differs between runs"
        );
    }
}

#[test]
fn check_passes_every_bundled_scenario() {
    let out = run(&["check"]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("approve exit"), "{stdout}");
    assert!(stdout.contains("identical under"), "{stdout}");
}

#[test]
fn check_fails_on_exit_plan_mode_outside_plan() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "{HEADER}[[steps]]\nuser = \"hi\"\n[[steps]]\nassistant = {{ tokens = 10 }}\n[[steps]]\nassistant = {{ tokens = 10, calls = [{{ tool = \"ExitPlanMode\", plan_tokens = 100 }}] }}\n"
    );
    let p = write_temp(dir.path(), "bad.toml", &body);
    let out = run(&["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("bad.toml: step 3 (line 14)"), "{err}");
    assert!(err.contains("ExitPlanMode outside plan mode"), "{err}");
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn approving_nothing_names_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("{HEADER}[[steps]]\nuser = \"hi\"\n[[steps]]\napprove = \"exit\"\n");
    let p = write_temp(dir.path(), "nothing.toml", &body);
    let out = run(&["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("step 2 (line 12)"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("no pending ExitPlanMode"));
}

#[test]
fn unknown_field_is_bad_input_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("{HEADER}[[steps]]\nuser = \"hi\"\ncolour = 3\n");
    let p = write_temp(dir.path(), "typo.toml", &body);
    let out = run(&["run", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    // The step table that holds the stray key starts at line 10.
    assert!(err.contains("typo.toml: line 10, column 1"), "{err}");
    assert!(err.contains("exactly one key"), "{err}");
}

#[test]
fn missing_file_and_unknown_names_exit_2_without_panicking() {
    for args in [
        vec!["run", "does-not-exist.toml"],
        vec!["run", "scenarios/exercise-3.toml", "--strategy", "nope"],
        vec!["run", "scenarios/exercise-3.toml", "--cache", "nope"],
        vec!["check", "does-not-exist.toml"],
        vec!["generate", "--exploration-rounds", "4000000000"],
        vec!["frobnicate"],
    ] {
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).contains("panicked"), "{args:?}");
    }
}

#[test]
fn an_unwritable_output_leaves_no_partial_files() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("out");
    std::fs::write(&blocker, "a file, not a directory").unwrap();
    let out = run(&[
        "run",
        &scenario("exercise-3"),
        "--out",
        blocker.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(&blocker).unwrap(),
        "a file, not a directory"
    );
}

#[test]
fn the_readme_scenario_example_is_valid() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("```toml\nname = ")
        .expect("README has a scenario example")
        + 8;
    let body = &readme[start..start + readme[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(dir.path(), "readme.toml", body);
    let out = run(&["check", p.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("allow (granted prompt \"run tests\")"));
}

/// A request the Anthropic API would refuse (HTTP 400) is bad input, not a priced request.
#[test]
fn breakpoints_the_api_refuses_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |system: &str, tools: &str| {
        format!(
            "name = \"marks\"\nmodel = \"claude-sonnet-4-5\"\nsystem = [{system}]\ntools = [{tools}]\n[[steps]]\nuser = {{ tokens = 50 }}\n[[steps]]\nassistant = {{ tokens = 10 }}\n"
        )
    };
    let five_marks = scenario(
        "{ tokens = 1000, cache_control = \"1h\" }, { tokens = 1000, cache_control = \"1h\" }, { tokens = 1000, cache_control = \"1h\" }",
        "{ name = \"Read\", tokens = 500, cache_control = \"1h\" }, { name = \"Grep\", tokens = 500, cache_control = \"1h\" }",
    );
    let p = write_temp(dir.path(), "five.toml", &five_marks);
    let out = run(&["run", p.to_str().unwrap(), "--cache", "anthropic-explicit"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("carries 5 cache breakpoints"), "{err}");
    assert!(err.contains("allows 4"), "{err}");
    // Four marks are fine, and the other models ignore the marks.
    let four = scenario(
        "{ tokens = 1000, cache_control = \"1h\" }, { tokens = 1000, cache_control = \"1h\" }",
        "{ name = \"Read\", tokens = 500, cache_control = \"1h\" }, { name = \"Grep\", tokens = 500, cache_control = \"1h\" }",
    );
    let p4 = write_temp(dir.path(), "four.toml", &four);
    let out = run(&["run", p4.to_str().unwrap(), "--cache", "anthropic-explicit"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(&["run", p.to_str().unwrap(), "--cache", "anthropic,ideal"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A 1 h mark after a 5 m one: longer TTLs must come first.
    let order = scenario(
        "{ tokens = 1000, cache_control = \"1h\" }",
        "{ name = \"Read\", tokens = 1200, cache_control = \"5m\" }",
    );
    let p = write_temp(dir.path(), "order.toml", &order);
    let out = run(&["run", p.to_str().unwrap(), "--cache", "anthropic-explicit"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("longer TTLs first"),
        "{}",
        text(&out.stderr)
    );
}
