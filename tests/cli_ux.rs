//! The command line behaves like the tools its users already trust: machine output flags,
//! thresholds, prices, context windows, names, messages, colour, completions and the report's
//! overview. One test (or more) per behaviour, all through the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plancache"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
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

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

const AUTH: &str = "scenarios/auth-plan.toml";

/// A small valid scenario on `model`, with `user` tokens in its first message.
fn tiny(model: &str, user_tokens: u32, extra: &str) -> String {
    format!(
        "name = \"tiny\"\nmodel = \"{model}\"\n{extra}\nsystem = {{ tokens = 3000 }}\n[[tools]]\nname = \"Read\"\ntokens = 400\n\n[[steps]]\nuser = {{ tokens = {user_tokens} }}\n[[steps]]\nassistant = {{ tokens = 50 }}\n[[steps]]\nuser = \"thanks\"\n[[steps]]\nassistant = {{ tokens = 20 }}\n"
    )
}

// --- machine output -------------------------------------------------------------------------

#[test]
fn json_goes_to_stdout_instead_of_the_table() {
    for flags in [&["--json"][..], &["--format", "json"][..]] {
        let mut args = vec!["run", AUTH, "--strategy", "masked", "--cache", "ideal"];
        args.extend_from_slice(flags);
        let o = run(&args);
        assert!(o.status.success(), "{}", err(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON only");
        assert_eq!(v["summary"][0]["strategy"], "masked", "{flags:?}");
        assert!(!out(&o).contains("TTFT ms"), "table printed with {flags:?}");
    }
}

#[test]
fn exports_go_to_files_and_one_to_stdout_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (json, md) = (dir.path().join("r.json"), dir.path().join("s.md"));
    let o = run(&[
        "run",
        AUTH,
        "--strategy",
        "permission-mode,masked",
        "--cache",
        "ideal",
        "--export-json",
        json.to_str().unwrap(),
        "--export-markdown",
        md.to_str().unwrap(),
        "--export-csv",
        "-",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    // stdout is summary.csv alone: a header and one row per strategy.
    let csv = out(&o);
    assert!(
        csv.starts_with("scenario,strategy,cache,requests,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 3, "{csv}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["summary"].as_array().unwrap().len(), 2);
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .starts_with("| scenario | strategy |"));
}

#[test]
fn two_outputs_on_stdout_and_bad_destinations_fail_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "taken", "x");
    for (args, needle) in [
        (vec!["--json", "--export-csv", "-"], "only one can"),
        (vec!["--out", "-"], "--out takes a directory, not `-`"),
        (
            vec!["--out", file.to_str().unwrap()],
            "exists and is not a directory",
        ),
        (
            vec!["--export-json", dir.path().to_str().unwrap()],
            "is a directory",
        ),
    ] {
        let mut all = vec!["run", AUTH];
        all.extend(args.iter().copied());
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(err(&o).contains(needle), "{args:?}: {}", err(&o));
        // Refused before the replay: no table on stdout, no directory named `-`.
        assert!(out(&o).is_empty(), "{args:?}");
    }
    assert!(!Path::new(env!("CARGO_MANIFEST_DIR")).join("-").exists());
}

#[test]
fn dash_is_stdout_for_export_and_compare() {
    let o = run(&[
        "export",
        "mooncake",
        AUTH,
        "--strategy",
        "masked",
        "--out",
        "-",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    // One JSON line per request: auth-plan sends 7.
    assert_eq!(out(&o).lines().count(), 7);
    // compare prints its summary anyway: `--out -` neither duplicates it nor makes a file `-`.
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let args = ["--strategy", "masked", "--cache", "ideal"];
    let mut save = vec!["run", AUTH, "--out", base.to_str().unwrap()];
    save.extend(args);
    assert!(run(&save).status.success());
    let mut gate = vec![
        "compare",
        AUTH,
        "--baseline",
        base.to_str().unwrap(),
        "--out",
        "-",
    ];
    gate.extend(args);
    let o = run(&gate);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).matches("passed").count(), 1, "{}", out(&o));
    assert!(!Path::new(env!("CARGO_MANIFEST_DIR")).join("-").exists());
}

#[test]
fn generate_count_refuses_a_file_name_for_out() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x.toml");
    let o = run(&[
        "generate",
        "--count",
        "3",
        "--out",
        target.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("looks like a file name"), "{}", err(&o));
    assert!(!target.exists());
}

// --- thresholds and the gate ----------------------------------------------------------------

#[test]
fn hit_rate_thresholds_are_points_and_a_bare_5_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let o = run(&[
        "run",
        AUTH,
        "--strategy",
        "permission-mode",
        "--out",
        base.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    // Raise the baseline's hit rate by 16 points, so the current run is a 16-point drop.
    let summary = base.join("summary.csv");
    let text = std::fs::read_to_string(&summary).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header.iter().position(|h| *h == "hit_rate").unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
    let hit: f64 = cells[col].parse().unwrap();
    cells[col] = format!("{:.4}", hit + 0.16);
    lines[1] = cells.join(",");
    std::fs::write(&summary, lines.join("\n") + "\n").unwrap();
    let gate = |limit: &str| {
        run(&[
            "compare",
            AUTH,
            "--baseline",
            summary.to_str().unwrap(),
            "--strategy",
            "permission-mode",
            "--max-cost-increase",
            "100%",
            "--max-ttft-increase",
            "100%",
            "--max-hit-rate-drop",
            limit,
        ])
    };
    // 5 would have meant 500 points: refused, with the spelling that was meant.
    let o = gate("5");
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("write `5%`"), "{}", err(&o));
    // 5% and 0.05 are both 5 points: the 16-point drop fails either way; 20% lets it pass.
    assert_eq!(gate("5%").status.code(), Some(1));
    assert_eq!(gate("0.05").status.code(), Some(1));
    assert_eq!(gate("20%").status.code(), Some(0));
}

#[test]
fn a_nan_or_infinite_baseline_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["NaN", "inf", "-0.5"] {
        let p = write(
            dir.path(),
            "summary.csv",
            &format!("scenario,strategy,cache,hit_rate,cost_usd,ttft_ms,recomputed_tokens\nauth-plan,permission-mode,anthropic,0.8,{bad},900,100\n"),
        );
        let o = run(&["compare", AUTH, "--baseline", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(
            err(&o).contains("line 2: column `cost_usd`"),
            "{bad}: {}",
            err(&o)
        );
    }
    let p = write(
        dir.path(),
        "run.json",
        r#"{"summary":[{"scenario":"a","strategy":"b","cache":"c","hit_rate":1e999,"cost_usd":1,"ttft_ms":1,"recomputed_tokens":1}]}"#,
    );
    let o = run(&["compare", AUTH, "--baseline", p.to_str().unwrap()]);
    // serde_json reads 1e999 as infinity only where allowed; either way the gate must not pass.
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

#[test]
fn a_typo_in_a_rule_is_bad_input_with_a_suggestion() {
    let o = run(&[
        "compare",
        AUTH,
        "--baseline",
        "results",
        "--rule",
        "permision-mode<=toolset-swap:cost",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("did you mean `permission-mode`?"),
        "{}",
        err(&o)
    );
    let o = run(&[
        "compare",
        AUTH,
        "--baseline",
        "results",
        "--rule",
        "permission-mode<=toolset-swap:cots",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("did you mean `cost`?"), "{}", err(&o));
}

// --- names ----------------------------------------------------------------------------------

#[test]
fn unknown_names_get_did_you_mean() {
    let o = run(&["run", AUTH, "--strategy", "permision-mode"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("did you mean `permission-mode`?"),
        "{}",
        err(&o)
    );
    let o = run(&["run", AUTH, "--cache", "antropic"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("did you mean `anthropic`?"), "{}", err(&o));
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "m.toml", &tiny("claude-sonet-4-5", 100, ""));
    let o = run(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("m.toml") && e.contains("did you mean `claude-sonnet-4-5`?"),
        "{e}"
    );
    assert!(e.contains("--price"), "{e}");
}

// --- prices ---------------------------------------------------------------------------------

fn cost_of(o: &Output) -> f64 {
    assert!(o.status.success(), "{}", err(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["summary"][0]["cost_usd"].as_f64().unwrap()
}

#[test]
fn dated_ids_and_aliases_price_like_their_model() {
    let dir = tempfile::tempdir().unwrap();
    let cost = |model: &str| {
        let p = write(dir.path(), "m.toml", &tiny(model, 2000, ""));
        cost_of(&run(&[
            "run",
            p.to_str().unwrap(),
            "--strategy",
            "masked",
            "--json",
        ]))
    };
    let base = cost("claude-sonnet-4-5");
    assert!(base > 0.0);
    assert_eq!(cost("claude-sonnet-4-5-20250929"), base);
    assert_eq!(cost("claude-sonnet-4-5@20250929"), base);
    assert_eq!(cost("claude-sonnet-4-0"), cost("claude-sonnet-4"));
}

#[test]
fn price_flag_prices_an_unknown_model() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "m.toml", &tiny("acme-large-1", 2000, ""));
    let o = run(&["run", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let price = |spec: &str| {
        cost_of(&run(&[
            "run",
            p.to_str().unwrap(),
            "--strategy",
            "masked",
            "--cache",
            "ideal",
            "--json",
            "--price",
            spec,
        ]))
    };
    // Every part of the cost is linear in the two prices: doubling both doubles the cost.
    let one = price("input=1,output=2");
    let two = price("input=2,output=4");
    assert!(one > 0.0);
    assert!((two - 2.0 * one).abs() < 1e-9, "{one} {two}");
    let o = run(&["run", p.to_str().unwrap(), "--price", "input=1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("both `input` and `output` are required"));
    let o = run(&["run", p.to_str().unwrap(), "--price", "input=1,ouput=2"]);
    assert!(err(&o).contains("did you mean `output`?"), "{}", err(&o));
}

#[test]
fn pricing_files_with_nan_infinite_or_negative_prices_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (key, value) in [
        ("output", "nan"),
        ("input", "inf"),
        ("read", "-0.1"),
        ("output", "1e400"),
    ] {
        let body = "[[models]]\nname = \"x\"\nprovider = \"custom\"\ninput = 1.0\noutput = 2.0\nwrite_5m = 1.25\nread = 0.1\n"
            .replace(&format!("{key} = "), &format!("{key} = {value} # "));
        let p = write(dir.path(), "prices.toml", &body);
        let o = run(&["run", AUTH, "--pricing", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{key}={value}");
        let e = err(&o);
        assert!(e.contains("prices.toml"), "{e}");
        // 1e400 overflows to infinity when read; TOML may also refuse it as a number.
        if value != "1e400" {
            assert!(e.contains(&format!("`{key}`")), "{key}={value}: {e}");
        }
    }
}

// --- context windows ------------------------------------------------------------------------

#[test]
fn run_and_check_warn_about_requests_over_the_context_window() {
    let dir = tempfile::tempdir().unwrap();
    // 250,000 user tokens + 3,000 system + 400 tools: over claude-sonnet-4-5's 200,000.
    let p = write(
        dir.path(),
        "big.toml",
        &tiny("claude-sonnet-4-5", 250_000, ""),
    );
    let o = run(&[
        "run",
        p.to_str().unwrap(),
        "--strategy",
        "masked",
        "--cache",
        "ideal",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    // Both requests carry the 250,000-token message: 2 requests over the window.
    assert!(
        e.contains("tiny: 2 request(s) exceed the 200,000 context window of claude-sonnet-4-5"),
        "{e}"
    );
    let o = run(&["check", p.to_str().unwrap()]);
    assert!(
        out(&o).contains("exceed the 200,000 context window"),
        "{}",
        out(&o)
    );
    let small = write(
        dir.path(),
        "small.toml",
        &tiny("claude-sonnet-4-5", 1000, ""),
    );
    let o = run(&["run", small.to_str().unwrap(), "--cache", "ideal"]);
    assert!(!err(&o).contains("context window"));
}

#[test]
fn generate_and_sweep_refuse_points_over_the_context_window() {
    let big = [
        "--seed",
        "3",
        "--exploration-rounds",
        "400",
        "--result-tokens",
        "3000..4000",
    ];
    let mut args = vec!["generate"];
    args.extend(big);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--allow-over-context"), "{}", err(&o));
    args.push("--allow-over-context");
    assert!(run(&args).status.success());

    let dir = tempfile::tempdir().unwrap();
    let sweep = write(
        dir.path(),
        "s.toml",
        "name = \"big\"\n[base]\nseed = 3\nresult_tokens = { min = 3000, max = 4000 }\n[grid]\nexploration_rounds = [2, 400]\nstrategy = [\"permission-mode\"]\ncache = [\"ideal\"]\n",
    );
    let out_dir = dir.path().join("out");
    let o = run(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("point 2") && err(&o).contains("context window"),
        "{}",
        err(&o)
    );
    let o = run(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--allow-over-context",
    ]);
    assert!(o.status.success(), "{}", err(&o));
}

// --- check notes ----------------------------------------------------------------------------

#[test]
fn check_notes_comparisons_that_cannot_differ() {
    let o = run(&["check", AUTH]);
    let s = out(&o);
    assert!(s.contains("no block has a `cache_control` mark"), "{s}");
    assert!(
        s.contains("no `plan_model`, so model-switch sends exactly what permission-mode sends"),
        "{s}"
    );
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "p.toml",
        &tiny("claude-sonnet-4-5", 100, "plan_model = \"claude-opus-4-6\"").replace(
            "system = { tokens = 3000 }",
            "system = { tokens = 3000, cache_control = \"5m\" }",
        ),
    );
    let o = run(&["check", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        !out(&o).contains("plan_model`, so") && !out(&o).contains("cache_control` mark"),
        "{}",
        out(&o)
    );
}

// --- messages -------------------------------------------------------------------------------

#[test]
fn scenario_errors_speak_toml_not_rust() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "a.toml",
        &tiny("claude-sonnet-4-5", 100, "").replace("system = { tokens = 3000 }", "system = 5"),
    );
    let e = err(&run(&["check", p.to_str().unwrap()]));
    assert!(
        e.contains("a.toml: line 4") && e.contains("expected a block or a list of blocks"),
        "{e}"
    );
    assert!(!e.contains("untagged") && !e.contains("enum"), "{e}");
    let p = write(
        dir.path(),
        "b.toml",
        &tiny("claude-sonnet-4-5", 100, "").replace("tokens = 100", "tokens = 5000000000"),
    );
    let e = err(&run(&["check", p.to_str().unwrap()]));
    assert!(!e.contains("u32") && !e.contains("i128"), "{e}");
}

#[test]
fn text_that_is_not_utf8_gets_its_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("latin1.toml");
    // `name = "caf` then 0xe9 (é in Latin-1): byte 11 on line 1, column 12.
    std::fs::write(&p, b"name = \"caf\xe9\"\n").unwrap();
    let o = run(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(e.contains("byte 11 (line 1, column 12) is 0xe9"), "{e}");
    assert!(e.contains("UTF-8") && !e.contains("check the path"), "{e}");
}

// --- colour, completions, man ----------------------------------------------------------------

#[test]
fn colour_follows_the_flag_and_no_color() {
    let args = ["run", AUTH, "--strategy", "masked", "--cache", "ideal"];
    let esc = |o: &Output| o.stdout.contains(&0x1b);
    let o = bin()
        .args(args)
        .arg("--color")
        .arg("always")
        .output()
        .unwrap();
    assert!(esc(&o), "--color always");
    assert!(
        !esc(&bin().args(args).output().unwrap()),
        "a pipe is not a terminal"
    );
    let o = bin()
        .args(args)
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    assert!(esc(&o), "CLICOLOR_FORCE");
    let o = bin()
        .args(args)
        .env("CLICOLOR_FORCE", "1")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!esc(&o), "NO_COLOR wins");
    let o = bin()
        .args(args)
        .arg("--color=never")
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    assert!(!esc(&o), "--color never");
    // Machine output never carries colour.
    let o = bin()
        .args(args)
        .args(["--json", "--color", "always"])
        .output()
        .unwrap();
    assert!(!esc(&o));
    // Errors: the label is coloured when asked.
    let o = bin()
        .args(["run", "nope.toml", "--color", "always"])
        .output()
        .unwrap();
    assert!(o.stderr.starts_with(b"\x1b["), "{}", err(&o));
}

#[test]
fn completions_and_man_pages() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let s = out(&o);
        assert!(
            s.contains("plancache") && s.contains("export-json"),
            "{shell}"
        );
    }
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
    let o = run(&["man"]);
    assert!(o.status.success());
    let s = out(&o);
    assert!(
        s.starts_with(".ie") || s.contains(".TH plancache"),
        "{}",
        &s[..200.min(s.len())]
    );
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["man", "--out", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(dir.path().join("plancache.1").exists() && dir.path().join("plancache-run.1").exists());
}

// --- README ---------------------------------------------------------------------------------

#[test]
fn the_readme_quick_start_prints_what_the_readme_shows() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("## Quick start").unwrap();
    let block = &readme[start..];
    let table = block
        .split("```text\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "run",
        "scenarios/exercise-3.toml",
        "--out",
        dir.path().join("out").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), table, "README's quick-start table is stale");
    assert!(err(&o).contains("no `plan_model`") && err(&o).contains("wrote "));
}
