//! Parameters on the user's own files (`--model`, `--ttl`, `--keepalive`, `--set`), sweeps over
//! scenario files (`-L`), and `run --reference`: each through the binary, with the expected
//! figures derived by hand from data/pricing.toml in the comments.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plancache"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env("NO_COLOR", "1");
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One request of 3,000 (system) + 400 (tool) + 100 (user) = 3,500 prompt tokens and 50 output
/// tokens, a 10-minute wait (step 3), then 3,500 + 50 + 20 = 3,570 prompt and 20 output tokens.
const TINY: &str = "name = \"tiny\"\nmodel = \"claude-sonnet-4-6\"\nsystem = { tokens = 3000 }\n[[tools]]\nname = \"Read\"\ntokens = 400\n\n[[steps]]\nuser = { tokens = 100 }\n[[steps]]\nassistant = { tokens = 50 }\n[[steps]]\nwait = \"10m\"   # the user is away\n[[steps]]\nuser = { tokens = 20 }\n[[steps]]\nassistant = { tokens = 20 }\n";

fn tiny(dir: &Path) -> PathBuf {
    let p = dir.join("tiny.toml");
    std::fs::write(&p, TINY).unwrap();
    p
}

/// The summary's cost of the one strategy run, from run.json.
fn cost(extra: &[&str]) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let mut args = vec![
        "run",
        path.to_str().unwrap(),
        "--strategy",
        "permission-mode",
        "--json",
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{extra:?}: {}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["summary"][0]["cost_usd"].as_f64().unwrap()
}

fn close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
}

#[test]
fn model_ttl_keepalive_and_set_change_the_replay_of_the_users_file() {
    // As written: Sonnet 4.6 ($3 input, $15 output, 1 h writes 2x, reads 0.1x), 1 h entries.
    // Request 1 writes 3,500 at $6/M = 0.021 + 50 output 0.00075; request 2 reads 3,500 at
    // $0.30/M = 0.00105, writes 70 at $6/M = 0.00042, 20 output 0.0003. Sum 0.02352.
    close(cost(&[]), 0.02352);
    // --model claude-opus-4-6: its 4,096-token minimum exceeds both prompts, nothing is
    // cached: 7,070 x $5/M = 0.03535 + 70 output x $25/M = 0.00175. Sum 0.0371.
    close(cost(&["--model", "claude-opus-4-6"]), 0.0371);
    // --ttl 5m: the 10-minute wait expires the entries; both requests write at $3.75/M:
    // 3,500 -> 0.013125 + 0.00075, 3,570 -> 0.0133875 + 0.0003. Sum 0.0275625.
    close(cost(&["--ttl", "5m"]), 0.0275625);
    // --ttl 5m --keepalive 4m: pings at 4m and 8m re-send request 1 (read 3,500 at $0.30/M
    // plus 1 output token: 0.001065 each); request 2 then reads 3,500 (0.00105) and writes 70
    // (0.0002625) + 0.0003. Sum 0.013875 + 0.00213 + 0.0016125 = 0.0176175.
    close(cost(&["--ttl", "5m", "--keepalive", "4m"]), 0.0176175);
    // --set steps[3].wait=1m under 5 m entries: request 2 reads 3,500 without pings:
    // 0.013875 + 0.00105 + 0.0002625 + 0.0003 = 0.0154875.
    close(
        cost(&["--ttl", "5m", "--set", "steps[3].wait=1m"]),
        0.0154875,
    );
    // The table form takes a field: steps[3].wait.duration on a `wait = "10m"` string.
    close(
        cost(&["--ttl", "5m", "--set", "steps[3].wait.duration=1m"]),
        0.0154875,
    );
    // An explicit --set wins over --model (applied after it).
    close(
        cost(&[
            "--model",
            "claude-opus-4-6",
            "--set",
            "model=claude-sonnet-4-6",
        ]),
        0.02352,
    );
}

#[test]
fn report_and_compare_take_the_same_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let p = path.to_str().unwrap();
    let base = dir.path().join("base");
    let o = run(&[
        "run",
        p,
        "--strategy",
        "permission-mode",
        "--out",
        base.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let summary = base.join("summary.csv");
    let s = summary.to_str().unwrap();
    // The same figures pass; --model claude-opus-4-6 raises the cost from 0.02352 to 0.0371
    // (see above), a regression: exit 1.
    let same = run(&[
        "compare",
        p,
        "--baseline",
        s,
        "--strategy",
        "permission-mode",
    ]);
    assert_eq!(same.status.code(), Some(0), "{}", err(&same));
    let opus = run(&[
        "compare",
        p,
        "--baseline",
        s,
        "--strategy",
        "permission-mode",
        "--model",
        "claude-opus-4-6",
    ]);
    assert_eq!(opus.status.code(), Some(1), "{}", err(&opus));
    // With --current nothing is replayed: the parameters are refused.
    let cur = run(&["compare", "--baseline", s, "--current", s, "--ttl", "5m"]);
    assert_eq!(cur.status.code(), Some(2));
    assert!(err(&cur).contains("--current"), "{}", err(&cur));
    // report: the keep-alive pings appear in its requests.csv (2 pings: 4 rows).
    let rep = dir.path().join("rep");
    let o = run(&[
        "report",
        p,
        "--strategy",
        "permission-mode",
        "--ttl",
        "5m",
        "--keepalive",
        "4m",
        "--out",
        rep.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let csv = std::fs::read_to_string(rep.join("requests.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
}

#[test]
fn unknown_paths_and_missing_entries_are_bad_input_with_the_nearest_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let p = path.to_str().unwrap();
    let o = run(&["run", p, "--set", "steps[3].wait.duraton=20m"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("`steps[3].wait` has no field `duraton`; did you mean `duration`?"),
        "{}",
        err(&o)
    );
    let o = run(&[
        "run",
        p,
        "--set",
        "steps[2].assistant.calls[1].result_token=5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("did you mean `result_tokens`?"),
        "{}",
        err(&o)
    );
    let o = run(&["run", p, "--set", "modle=claude-opus-4-6"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("did you mean `model`?"), "{}", err(&o));
    // TINY has 5 steps: there is no steps[12].
    let o = run(&["run", p, "--set", "steps[12].wait.duration=20m"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("`steps` has 5 entries, so there is no [12]"),
        "{}",
        err(&o)
    );
    assert!(err(&o).contains("tiny.toml"), "{}", err(&o));
    // A value the format refuses is caught by the loader, as in the file itself.
    let o = run(&["run", p, "--set", "steps[3].wait=soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("invalid duration `soon`"), "{}", err(&o));
    // A model the price table does not know, under --strict-pricing: the table's refusal.
    let o = run(&["run", p, "--model", "claude-opus-4-66", "--strict-pricing"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("claude-opus-4-66"), "{}", err(&o));
    let o = run(&["run", p, "--ttl", "2h"]);
    assert_eq!(o.status.code(), Some(2));
    // The file itself is untouched.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), TINY);
}

#[test]
fn run_reference_adds_relative_columns_and_a_verdict() {
    let o = run(&["run", "scenarios/exercise-3.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cost = |s: &str| {
        v["summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["strategy"] == s)
            .unwrap()["cost_usd"]
            .as_f64()
            .unwrap()
    };
    // The README's figures: permission-mode 0.1526 / toolset-swap 0.2459 = 0.62x, hit rate
    // 83.4% - 66.3% = +17.1 points; history-reset (0.1495) is the cheapest: 0.61x.
    let o = run(&["run", "scenarios/exercise-3.toml"]);
    let text = out(&o);
    let header = text.lines().next().unwrap();
    assert!(header.ends_with("TTFT ms  × cost  Δ hit rate"), "{header}");
    let row = text
        .lines()
        .find(|l| l.contains("permission-mode"))
        .unwrap();
    assert!(row.ends_with("0.62×    +17.1 pt"), "{row}");
    let row = text.lines().find(|l| l.contains("toolset-swap")).unwrap();
    assert!(row.ends_with("1.00×         ref"), "{row}");
    assert!(
        text.ends_with("\nexercise-3: history-reset: 0.61× the cost of toolset-swap\n"),
        "{text}"
    );
    // Against permission-mode: history-reset 0.1495 / 0.1526 = 0.98x.
    let o = run(&[
        "run",
        "scenarios/exercise-3.toml",
        "--reference",
        "permission-mode",
    ]);
    let want = format!("{:.2}×", cost("history-reset") / cost("permission-mode"));
    assert_eq!(want, "0.98×");
    assert!(
        out(&o).ends_with(&format!(
            "exercise-3: history-reset: {want} the cost of permission-mode\n"
        )),
        "{}",
        out(&o)
    );
    // The reference is the cheapest: the next, deferred-tools (0.1523 / 0.1495 = 1.02x).
    let o = run(&[
        "run",
        "scenarios/exercise-3.toml",
        "--reference",
        "history-reset",
    ]);
    assert!(
        out(&o).ends_with(
            "exercise-3: history-reset is the cheapest; next deferred-tools at 1.02× its cost\n"
        ),
        "{}",
        out(&o)
    );
    // An unknown reference: exit 2 with the nearest strategy run.
    let o = run(&[
        "run",
        "scenarios/exercise-3.toml",
        "--reference",
        "permision-mode",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("did you mean `permission-mode`?"),
        "{}",
        err(&o)
    );
    // One strategy: nothing to compare, the table is as before.
    let o = run(&["run", "scenarios/exercise-3.toml", "--strategy", "masked"]);
    assert!(!out(&o).contains("× cost"), "{}", out(&o));
}

#[test]
fn sweep_over_a_scenario_file_crosses_the_lists_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny(dir.path());
    let outdir = dir.path().join("sw");
    let o = run(&[
        "sweep",
        path.to_str().unwrap(),
        "--strategy",
        "permission-mode",
        "-L",
        "model=claude-sonnet-4-6,claude-opus-4-6",
        "-L",
        "ttl=1h,5m",
        "--out",
        outdir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    // Costs from the derivations above: sonnet 1h 0.02352, sonnet 5m 0.0275625; opus caches
    // nothing (4,096 minimum), so the TTL changes nothing: 0.0371 both.
    let costs: Vec<&str> = text
        .lines()
        .skip(1)
        .take(4)
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(costs, ["0.0235", "0.0276", "0.0371", "0.0371"], "{text}");
    // 0.0275625 / 0.02352 = 1.17x; opus 1.00x.
    assert!(text.contains("model=claude-sonnet-4-6: ttl=5m: 1.17× the cost of ttl=1h ($0.0276 vs $0.0235, adds $0.0040)"), "{text}");
    assert!(
        text.contains("model=claude-opus-4-6: ttl=5m: 1.00× the cost of ttl=1h"),
        "{text}"
    );
    let csv = std::fs::read_to_string(outdir.join("sweep.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("point,model,ttl,scenario,strategy,cache,"),
        "{header}"
    );
    assert_eq!(csv.lines().count(), 1 + 4);
    // A scenario path and a cache-config field as axes: under message_ttl = 5m (system and
    // tools keep their 1 h entry) the 10-minute wait loses the 100-token user message's entry
    // and the 1-minute wait does not, so the 10-minute point costs more.
    let o = run(&[
        "sweep",
        path.to_str().unwrap(),
        "--strategy",
        "permission-mode",
        "-L",
        "steps[3].wait.duration=1m,10m",
        "-L",
        "anthropic.message_ttl=5m",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let c: Vec<f64> = out(&o)
        .lines()
        .skip(1)
        .take(2)
        .map(|l| l.split_whitespace().last().unwrap().parse().unwrap())
        .collect();
    assert!(c[1] > c[0], "{}", out(&o));
    // Bad axes are exit 2 naming the axis.
    for (spec, want) in [
        ("steps[3].wait.duraton=1m", "did you mean `duration`?"),
        ("ttl=2h", "-L ttl=2h"),
        ("model=claude-opus-4-66", "-L model=claude-opus-4-66"),
        ("strategy=permision-mode", "-L strategy=permision-mode"),
    ] {
        let o = run(&[
            "sweep",
            path.to_str().unwrap(),
            "--strict-pricing",
            "-L",
            spec,
        ]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", err(&o));
        assert!(err(&o).contains(want), "{spec}: {}", err(&o));
    }
    // A sweep file takes its axes from [grid] only.
    let o = run(&["sweep", "sweeps/keepalive.toml", "-L", "ttl=5m"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Splits a README command line on spaces, keeping single-quoted words whole.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn the_readme_keepalive_question_prints_what_the_readme_shows() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("## Your own session, varied: one command")
        .unwrap();
    let block = &readme[start..];
    let command = block
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split('\n')
        .next()
        .unwrap();
    let shown = block
        .split("```text\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let args = words(command);
    assert_eq!(args[0], "plancache");
    let o = bin().args(&args[1..]).output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), shown, "README's keep-alive example is stale");
    // The figures, by hand (Sonnet 4.6: write 5 m $3.75/M, read $0.30/M, output $15/M; Opus
    // 4.6: $6.25/M, $0.50/M, $25/M). A 20-minute review pings at 4m30s, 9m, 13m30s and 18m,
    // each reading the 15,889-token prefix plus 1 output token: Sonnet 4 x 0.0047817 =
    // 0.0191268. Under 5 m entries, without pings the request after the review writes the
    // prefix again (15,889 x 3.75 = 0.0595838); with them it reads it (0.0047667): saves
    // 0.0595838 - 0.0047667 - 0.0191268 = 0.0356903. Under 1 h entries the pings only add
    // 0.0191268. Opus: pings 4 x (0.0079445 + 0.000025) = 0.031878; saves 0.0993063 -
    // 0.0079445 - 0.031878 = 0.0594838; adds 0.031878.
    for line in [
        "model=claude-sonnet-4-6, ttl=5m: keepalive=4m30s: 0.77× the cost of keepalive=off ($0.1172 vs $0.1528, saves $0.0357)",
        "model=claude-sonnet-4-6, ttl=1h: keepalive=4m30s: 1.14× the cost of keepalive=off ($0.1571 vs $0.1380, adds $0.0191)",
        "model=claude-opus-4-6, ttl=5m: keepalive=4m30s: 0.77× the cost of keepalive=off ($0.1953 vs $0.2547, saves $0.0595)",
        "model=claude-opus-4-6, ttl=1h: keepalive=4m30s: 1.14× the cost of keepalive=off ($0.2619 vs $0.2300, adds $0.0319)",
    ] {
        assert!(shown.contains(line), "{line}");
    }
}
