//! The composite GitHub Action (`action.yml`) and its recipe in docs/ci-gate.md: every flag the
//! action passes exists in `plancache compare`; its compare step, run with bash as the runner
//! would, gates a real baseline and writes the Markdown to the job summary; the recipe passes only
//! declared inputs, with values the command line accepts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{CommandFactory, Parser};
// The command line lives in the binary (the library exposes no clap types): its definition is
// compiled into this test as well.
#[allow(dead_code, unused_imports)]
#[path = "../src/cli/mod.rs"]
mod cli;
use cli::{Cli, Command as Sub};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn action() -> Value {
    let text = std::fs::read_to_string(root().join("action.yml")).unwrap();
    serde_yaml_ng::from_str(&text).expect("action.yml is YAML")
}

/// The step with this `id`.
fn step<'a>(action: &'a Value, id: &str) -> &'a Value {
    action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step with id {id}"))
}

/// Every declared input with its default (None: required, no default).
fn inputs(action: &Value) -> BTreeMap<String, Option<String>> {
    action["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let default = v["default"].as_str().map(String::from);
            if v["required"] == true {
                assert!(default.is_none(), "{k}: required inputs have no default");
            }
            (k.clone(), default)
        })
        .collect()
}

/// The long flags of `plancache compare` and the global ones.
fn compare_flags() -> Vec<String> {
    let cli = Cli::command();
    let compare = cli.find_subcommand("compare").expect("compare exists");
    cli.get_arguments()
        .chain(compare.get_arguments())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect()
}

/// The outcome of the compare step run with bash.
struct StepRun {
    code: i32,
    summary: String,
    outputs: String,
    stderr: String,
}

/// Runs the compare step's script with bash the way the runner does: `env:` resolved from the
/// given inputs (defaults otherwise), `steps.build.outputs.bin` = `plancache`, in `cwd`.
fn run_compare_step(given: &[(&str, &str)], plancache: &Path, cwd: &Path) -> StepRun {
    let action = action();
    let declared = inputs(&action);
    for (k, _) in given {
        assert!(declared.contains_key(*k), "input {k} is not declared");
    }
    let step = step(&action, "compare");
    assert_eq!(step["shell"], "bash");
    let scratch = tempfile::tempdir().unwrap();
    let summary = scratch.path().join("step_summary");
    let outputs = scratch.path().join("output");
    let mut cmd = Command::new("bash");
    cmd.arg("-e").arg("-c").arg(step["run"].as_str().unwrap());
    cmd.current_dir(cwd)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &outputs);
    for (name, value) in step["env"].as_object().unwrap() {
        let expr = value.as_str().unwrap();
        let inner = expr
            .strip_prefix("${{ ")
            .and_then(|e| e.strip_suffix(" }}"))
            .unwrap_or_else(|| panic!("{name}: {expr} is not one expression"));
        let resolved = if inner == "steps.build.outputs.bin" {
            plancache.to_string_lossy().into_owned()
        } else if let Some(input) = inner.strip_prefix("inputs.") {
            given
                .iter()
                .find(|(k, _)| *k == input)
                .map(|(_, v)| v.to_string())
                .or_else(|| declared[input].clone())
                .unwrap_or_else(|| panic!("required input {input} not given"))
        } else {
            panic!("{name}: unknown expression {inner}")
        };
        cmd.env(name, resolved);
    }
    let o = cmd.output().unwrap();
    StepRun {
        code: o.status.code().unwrap(),
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        outputs: std::fs::read_to_string(&outputs).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn every_flag_of_the_compare_step_is_a_flag_of_plancache_compare() {
    let action = action();
    assert_eq!(action["runs"]["using"], "composite");
    let run = step(&action, "compare")["run"].as_str().unwrap();
    // The invocation and the flags its arrays add (`rules+=(--rule ...)`).
    assert!(run.contains("\"$PLANCACHE\" compare "), "{run}");
    let used: Vec<&str> = run
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|w| w.starts_with("--"))
        .collect();
    let known = compare_flags();
    for flag in &used {
        assert!(
            known.iter().any(|k| k == flag),
            "{flag} is not a flag of compare"
        );
    }
    for flag in [
        "--baseline",
        "--max-cost-increase",
        "--max-hit-rate-drop",
        "--max-ttft-increase",
        "--rule",
        "--allow-missing",
        "--out",
    ] {
        assert!(used.contains(&flag), "the action never passes {flag}");
    }
    // Every input but the binary reaches the compare step, and every INPUT_ variable is used.
    let env = step(&action, "compare")["env"].as_object().unwrap();
    for name in inputs(&action).keys().filter(|k| *k != "plancache") {
        let var = format!("INPUT_{}", name.to_uppercase().replace('-', "_"));
        assert_eq!(env[&var], format!("${{{{ inputs.{name} }}}}"), "{var}");
        assert!(run.contains(&format!("\"${var}\"")), "{var} unused");
    }
    // The build step installs this action's own source.
    let build = step(&action, "build")["run"].as_str().unwrap();
    assert!(build.contains("cargo install --locked --path \"$ACTION_PATH\""));
    assert_eq!(
        step(&action, "build")["env"]["ACTION_PATH"],
        "${{ github.action_path }}"
    );
}

/// Writes a baseline of auth-plan under the ideal cache into `dir/base`.
fn baseline(dir: &Path) -> PathBuf {
    let base = dir.join("base");
    let o = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .current_dir(root())
        .args([
            "run",
            "scenarios/auth-plan.toml",
            "--cache",
            "ideal",
            "--out",
        ])
        .arg(&base)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    base.join("summary.csv")
}

#[cfg(unix)]
#[test]
fn the_compare_step_gates_a_real_baseline_and_writes_the_job_summary() {
    let dir = tempfile::tempdir().unwrap();
    let base = baseline(dir.path());
    let base_s = base.to_string_lossy().into_owned();
    let md = dir.path().join("gate.md");
    let md_s = md.to_string_lossy().into_owned();
    let bin = Path::new(env!("CARGO_BIN_EXE_plancache"));
    let given = [
        ("baseline", base_s.as_str()),
        ("scenarios", "scenarios/auth-plan.toml"),
        ("max-cost-increase", "2%"),
        ("rules", "permission-mode<=toolset-swap:cost\n"),
        ("summary-file", md_s.as_str()),
    ];
    // The run equals its own baseline, and permission-mode is the cheaper design on auth-plan
    // (results/report/summary.csv: 0.159850 against 0.244342 under anthropic).
    let r = run_compare_step(&given, bin, root());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written = std::fs::read_to_string(&md).unwrap();
    assert!(
        written.starts_with("## plancache compare: passed"),
        "{written}"
    );
    assert!(
        written.contains("permission-mode<=toolset-swap:cost"),
        "{written}"
    );
    assert_eq!(
        r.summary, written,
        "the job summary is the Markdown summary"
    );
    assert!(r.outputs.contains("exit-code=0\n"), "{}", r.outputs);
    assert!(r.outputs.contains(&format!("summary-file={md_s}\n")));

    // A baseline that cost half as much: every auth-plan point regresses by +100% > 2%: exit 1,
    // the failing summary in the job summary.
    let csv = std::fs::read_to_string(&base).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "cost_usd").unwrap();
    let mut halved = vec![csv.lines().next().unwrap().to_string()];
    for line in csv.lines().skip(1) {
        let mut f: Vec<String> = line.split(',').map(String::from).collect();
        f[col] = format!("{:.6}", f[col].parse::<f64>().unwrap() / 2.0);
        halved.push(f.join(","));
    }
    let cheap = dir.path().join("cheap.csv");
    std::fs::write(&cheap, halved.join("\n") + "\n").unwrap();
    let cheap_s = cheap.to_string_lossy().into_owned();
    let mut given_cheap = given;
    given_cheap[0] = ("baseline", cheap_s.as_str());
    let r = run_compare_step(&given_cheap, bin, root());
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.summary.starts_with("## plancache compare: FAILED"),
        "{}",
        r.summary
    );
    assert!(r.summary.contains("(+100.0%)"), "{}", r.summary);
    assert!(r.outputs.contains("exit-code=1\n"));

    // Bad input (no such baseline): exit 2, no summary file, and the job summary says why.
    given_cheap[0] = ("baseline", "no/such/summary.csv");
    let r = run_compare_step(&given_cheap, bin, root());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no/such/summary.csv"), "{}", r.stderr);
    assert!(
        !md.exists(),
        "a stale summary is not left from the run before"
    );
    assert!(r.summary.contains("stopped on bad input (exit 2)"));
    assert!(r.outputs.contains("summary-file=\n"));
}

/// The ```yaml block of docs/ci-gate.md's "GitHub Actions" section.
fn recipe() -> Value {
    let doc = std::fs::read_to_string(root().join("docs/ci-gate.md")).unwrap();
    let section = &doc[doc.find("## GitHub Actions").expect("section")..];
    let start = section.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    serde_yaml_ng::from_str(block).expect("the recipe is YAML")
}

#[cfg(unix)]
#[test]
fn the_recipe_in_ci_gate_md_uses_the_action_with_values_compare_accepts() {
    let recipe = recipe();
    let steps = recipe["jobs"]["gate"]["steps"].as_array().unwrap();
    let gate = steps
        .iter()
        .find(|s| s["uses"] == "./")
        .expect("a step uses the action");
    let with: Vec<(String, String)> = gate["with"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    let declared = inputs(&action());
    for (name, default) in &declared {
        if default.is_none() {
            assert!(
                with.iter().any(|(k, _)| k == name),
                "required {name} missing"
            );
        }
    }
    // The comment step reads an output the action declares.
    let outputs = action()["outputs"].as_object().unwrap().clone();
    assert!(outputs.contains_key("summary-file"));
    assert!(steps.iter().any(|s| s["run"]
        .as_str()
        .is_some_and(|r| r.contains("steps.gate.outputs.summary-file"))));

    // The step run with a recorder in place of plancache: the argument vector it would get,
    // parsed by plancache's own command line.
    let dir = tempfile::tempdir().unwrap();
    let argv = dir.path().join("argv");
    let recorder = dir.path().join("plancache");
    std::fs::write(
        &recorder,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}'\n",
            argv.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let given: Vec<(&str, &str)> = with.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = run_compare_step(&given, &recorder, dir.path());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let args: Vec<String> = std::fs::read_to_string(&argv)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let cli = Cli::try_parse_from(std::iter::once("plancache".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let Sub::Compare(c) = cli.command else {
        panic!("{args:?} is not compare")
    };
    // The recipe's values, as written in docs/ci-gate.md.
    assert_eq!(c.scenarios, [PathBuf::from("scenarios")]);
    assert_eq!(c.baseline, PathBuf::from("ci/baseline/summary.csv"));
    assert_eq!(c.max_cost_increase, "2%");
    assert_eq!(c.max_hit_rate_drop, "1%");
    assert_eq!(c.max_ttft_increase, "5%");
    assert_eq!(c.rules.len(), 1);
    assert!(!c.allow_missing && !c.quiet && !c.json);
    assert_eq!(c.out, Some(PathBuf::from("plancache-gate.md")));

    // The doc's input table lists every input with its default.
    let doc = std::fs::read_to_string(root().join("docs/ci-gate.md")).unwrap();
    for (name, default) in &declared {
        let shown = match default.as_deref() {
            None => "(required)".to_string(),
            Some("") if name == "rules" => "(none)".to_string(),
            Some("") => "(build it)".to_string(),
            Some(d) => format!("`{d}`"),
        };
        assert!(
            doc.contains(&format!("| `{name}` | {shown} |")),
            "docs/ci-gate.md: no row `{name}` | {shown}"
        );
    }
}
