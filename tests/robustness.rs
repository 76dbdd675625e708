//! Hostile and careless input (issue: nothing a user types or feeds can crash, hang, exhaust
//! memory or fake a green gate): each case exits 2 with a message naming the file and the place,
//! and interrupted runs leave either the previous or the new complete output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plancache"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts exit 2 and that stderr names every fragment.
fn bad_input(o: &Output, fragments: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for f in fragments {
        assert!(err.contains(f), "missing `{f}` in:\n{err}");
    }
}

const HEAD: &str = "name = \"x\"\nmodel = \"claude-sonnet-4-5\"\nsystem = { tokens = 100 }\ntools = [{ name = \"Read\", tokens = 10 }]\n";

#[test]
fn a_small_file_declaring_gigabytes_of_content_is_refused_by_the_budget() {
    // 110 messages of 20 M tokens each: 2.2 G tokens (> 8 GB of token ids). The budget
    // (25 M tokens) is crossed at the second message. Keys are counted in sorted order, so
    // `model` (17 bytes of text) and `name` (1) come first: 18 + 20 M + 20 M = 40000018.
    let dir = tempfile::tempdir().unwrap();
    let mut body = HEAD.to_string();
    for _ in 0..110 {
        body.push_str("[[steps]]\nuser = { tokens = 20000000 }\n");
    }
    body.push_str("[[steps]]\nassistant = { tokens = 5 }\n");
    let f = write(dir.path(), "huge.toml", &body);
    assert!(std::fs::metadata(&f).unwrap().len() < 5000);
    let o = run(&["run", s(&f)]);
    bad_input(
        &o,
        &[
            "huge.toml",
            "steps[2].user.tokens",
            "40000018 tokens",
            "limit of 25000000",
            "--max-session-tokens",
        ],
    );
    // The flag raises (here: lowers) the limit for every command.
    let o = run(&[
        "run",
        "scenarios/auth-plan.toml",
        "--max-session-tokens",
        "1000",
    ]);
    bad_input(
        &o,
        &["auth-plan.toml", "limit of 1000", "--max-session-tokens"],
    );
    let o = run(&["--max-steps", "3", "check", "scenarios/auth-plan.toml"]);
    bad_input(
        &o,
        &[
            "auth-plan.toml",
            "steps[4]",
            "more than 3 steps",
            "--max-steps",
        ],
    );
}

#[test]
fn too_many_subagents_are_refused_by_the_stream_budget() {
    let dir = tempfile::tempdir().unwrap();
    let agent = |k: usize| {
        format!("{{ name = \"a{k}\", system = {{ tokens = 5 }}, tools = [\"Read\"], prompt = \"go\", steps = [{{ assistant = {{ tokens = 5 }} }}] }}")
    };
    let agents: Vec<String> = (0..3).map(agent).collect();
    let body = format!(
        "{HEAD}[[tools]]\nname = \"Agent\"\ntokens = 10\n[[steps]]\nuser = \"hi\"\n[[steps]]\nagents = [{}]\n",
        agents.join(", ")
    );
    // `tools` is both an inline array in HEAD and a table array here: keep one form.
    let body = body.replace(
        "tools = [{ name = \"Read\", tokens = 10 }]\n",
        "[[tools]]\nname = \"Read\"\ntokens = 10\n",
    );
    let f = write(dir.path(), "agents.toml", &body);
    // Main stream + 3 agents = 4 streams > 3.
    let o = run(&["run", s(&f), "--max-streams", "3"]);
    bad_input(&o, &["agents.toml", "steps[2].agents[3]", "--max-streams"]);
}

#[test]
fn session_new_enforces_the_budget_for_library_callers() {
    use plancache::budget::Budget;
    let mut body = HEAD.to_string();
    body.push_str("[[steps]]\nuser = { tokens = 3000 }\n[[steps]]\nassistant = { tokens = 5 }\n");
    let path = Path::new("lib.toml");
    let scenario = plancache::scenario::load_str(&body, path).unwrap();
    // 3000 + 5 + 100 + 10 = 3115 tokens: a budget of 3000 refuses the scenario.
    let tight = Budget {
        max_session_tokens: 3000,
        ..Budget::DEFAULT
    };
    let e = tight.check_scenario(&scenario, path).unwrap_err();
    assert!(e.message.contains("limit of 3000"), "{e}");
    assert!(Budget::DEFAULT.check_scenario(&scenario, path).is_ok());
}

#[test]
fn a_wait_past_the_clock_is_bad_input_not_a_clock_going_backwards() {
    let dir = tempfile::tempdir().unwrap();
    // 18446744073709551 s = 18446744073709551000 ms fits u64 alone; added to the 20 s the user
    // took to type step 1 it does not (u64::MAX = 18446744073709551615).
    let body = format!("{HEAD}[[steps]]\nuser = \"hi\"\n[[steps]]\nwait = \"18446744073709551s\"\n[[steps]]\nassistant = {{ tokens = 5 }}\n");
    let f = write(dir.path(), "wait.toml", &body);
    let o = run(&["run", s(&f)]);
    bad_input(&o, &["wait.toml", "step 2 (line 7)", "clock overflows"]);
}

#[test]
fn an_infinite_cost_is_bad_input_and_report_does_not_spin() {
    let dir = tempfile::tempdir().unwrap();
    let pricing = write(
        dir.path(),
        "p.toml",
        "[[models]]\nname = \"claude-sonnet-4-5\"\nprovider = \"anthropic\"\ninput = 3.0\noutput = 1e308\nwrite_5m = 1.25\nwrite_1h = 2.0\nread = 0.1\nmin_cacheable = 1024\n",
    );
    let body = format!("{HEAD}[[steps]]\nuser = \"hi\"\n[[steps]]\nassistant = {{ tokens = 5 }}\n");
    let f = write(dir.path(), "cost.toml", &body);
    let out = dir.path().join("report");
    let o = run(&["report", s(&f), "--pricing", s(&pricing), "--out", s(&out)]);
    // 5 output tokens x 1e308 $/M overflows to infinity.
    bad_input(
        &o,
        &[
            "cost.toml",
            "step 2 (line 7)",
            "request 1",
            "inf dollars",
            "--pricing",
        ],
    );
    assert!(!out.exists(), "nothing written");
}

const SWEEP_HEAD: &str =
    "name = \"s\"\n[base]\nseed = 1\n[grid]\nstrategy = [\"permission-mode\"]\n";

#[test]
fn a_huge_or_wrapping_grid_is_refused_without_materialising_it() {
    let dir = tempfile::tempdir().unwrap();
    // 10 axes of 10 values: 10^10 points, above the default cap of 100000.
    let mut body = SWEEP_HEAD.to_string();
    for k in 0..10 {
        body.push_str(&format!("axis{k} = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n"));
    }
    let f = write(dir.path(), "ten.toml", &body);
    let o = run(&["sweep", s(&f), "--out", s(&dir.path().join("o"))]);
    bad_input(
        &o,
        &[
            "ten.toml",
            "[grid]",
            "more than 100000 points",
            "--max-points",
        ],
    );
    // 20 axes of 10 values: 10^20 points, more than u64 holds; even a raised cap cannot wrap.
    for k in 10..20 {
        body.push_str(&format!("axis{k} = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n"));
    }
    let f = write(dir.path(), "twenty.toml", &body);
    let o = run(&[
        "sweep",
        s(&f),
        "--max-points",
        "18446744073709551615",
        "--out",
        s(&dir.path().join("o")),
    ]);
    bad_input(&o, &["twenty.toml", "[grid]", "points"]);
    // merge --sweep on the huge grid: refused the same way, no missing-point list built.
    let shard = write(dir.path(), "shard-1-of-1.csv", "point,x\n1,2\n");
    let o = run(&[
        "merge",
        s(&shard),
        "--sweep",
        s(&f),
        "--out",
        s(&dir.path().join("m")),
    ]);
    bad_input(&o, &["twenty.toml", "[grid]"]);
}

#[test]
fn non_finite_sweep_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "nan.toml",
        &format!("{SWEEP_HEAD}exploration_rounds = [1, nan]\n"),
    );
    let o = run(&["sweep", s(&f), "--out", s(&dir.path().join("o"))]);
    bad_input(
        &o,
        &[
            "nan.toml",
            "[grid] exploration_rounds",
            "NaN",
            "not a finite number",
        ],
    );
}

const SMALL_SWEEP: &str = r#"
name = "small"
[compare]
a = "history-reset"
b = "permission-mode"
x = "exploration_rounds"
y = "implementation_turns"
[base]
seed = 3
[grid]
implementation_turns = [1, 2]
exploration_rounds = [1, 2, 3]
"#;

#[test]
fn merge_without_the_sweep_file_refuses_an_incomplete_set_of_shards() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "small.toml", SMALL_SWEEP);
    let shards = dir.path().join("shards");
    for i in 1..=3 {
        let o = run(&[
            "sweep",
            s(&f),
            "--shard",
            &format!("{i}/3"),
            "--out",
            s(&shards),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let shard = |i: usize| shards.join(format!("shard-{i}-of-3.csv"));
    let out = dir.path().join("merged");
    // The last shard missing: points 3, 6, 9, 12 are absent, which no gap in 1..=11 shows alone.
    let o = run(&["merge", s(&shard(1)), s(&shard(2)), "--out", s(&out)]);
    bad_input(&o, &["2 of 3 shard files given", "shard-3-of-3.csv"]);
    assert!(!out.join("sweep.csv").exists());
    // A renamed shard cannot show its completeness: --sweep is needed.
    let renamed = write(
        dir.path(),
        "part.csv",
        &std::fs::read_to_string(shard(1)).unwrap(),
    );
    let o = run(&["merge", s(&renamed), "--out", s(&out)]);
    bad_input(&o, &["part.csv", "--sweep"]);
    // All three: fine.
    let o = run(&[
        "merge",
        s(&shard(1)),
        s(&shard(2)),
        s(&shard(3)),
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(out.join("sweep.csv"))
            .unwrap()
            .lines()
            .count(),
        1 + 12
    );
}

#[test]
fn io_errors_in_sweep_and_merge_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "small.toml", SMALL_SWEEP);
    // The output "directory" is a file.
    let blocker = write(dir.path(), "blocker", "not a directory");
    let o = run(&["sweep", s(&f), "--out", s(&blocker)]);
    bad_input(&o, &["blocker"]);
    let o = run(&["sweep", s(&f), "--shard", "1/2", "--out", s(&blocker)]);
    bad_input(&o, &["blocker"]);
    let o = run(&[
        "merge",
        s(&dir.path().join("absent-shard-1-of-1.csv")),
        "--out",
        s(&dir.path().join("m")),
    ]);
    bad_input(&o, &["absent-shard-1-of-1.csv", "cannot read"]);
}

#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_stdout_exits_2_without_a_panic() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = bin()
        .args(["run", "scenarios/auth-plan.toml"])
        .stdout(full)
        .output()
        .unwrap();
    bad_input(&o, &["cannot write to standard output"]);
}

#[test]
fn same_named_scenarios_are_keyed_by_file_stem_and_reported_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let body = |name: &str| {
        format!(
            "{}[[steps]]\nuser = \"hi\"\n[[steps]]\nassistant = {{ tokens = 5 }}\n",
            HEAD.replace("name = \"x\"", &format!("name = \"{name}\""))
        )
    };
    // `Plan A` and `plan/a` both become the file name `plan-a` (case folded).
    let a = write(dir.path(), "first.toml", &body("Plan A"));
    let b = write(dir.path(), "second.toml", &body("plan/a"));
    let out = dir.path().join("rep");
    let o = run(&[
        "report",
        s(&a),
        s(&b),
        "--strategy",
        "permission-mode",
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("first.toml")
            && err.contains("second.toml")
            && err.contains("keyed by file stem"),
        "{err}"
    );
    let charts: Vec<String> = std::fs::read_dir(out.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(charts.iter().any(|c| c.starts_with("first-")), "{charts:?}");
    assert!(
        charts.iter().any(|c| c.starts_with("second-")),
        "{charts:?}"
    );
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        summary.contains("\nfirst,") && summary.contains("\nsecond,"),
        "{summary}"
    );
    // The same file named twice cannot be told apart: exit 2 up front.
    let o = run(&["run", s(&a), s(&a)]);
    bad_input(&o, &["first.toml", "name", "overwrite"]);
}

/// Every file under `dir` (relative path -> bytes), hidden ones included.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.map(Result::unwrap) {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn stale_charts_of_an_earlier_report_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    let mine = write(dir.path(), "notes.txt", "");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::copy(&mine, out.join("notes.txt")).unwrap();
    let args = |scenarios: &[&str]| {
        let mut v = vec!["report".to_string()];
        v.extend(scenarios.iter().map(|s| s.to_string()));
        v.extend(["--strategy", "permission-mode", "--out", s(&out)].map(String::from));
        v
    };
    let o = bin()
        .args(args(&[
            "scenarios/auth-plan.toml",
            "tests/fixtures/ttl-long-wait.toml",
        ]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(snapshot(&out).keys().any(|k| k.contains("ttl-long-wait")));
    let o = bin()
        .args(args(&["scenarios/auth-plan.toml"]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let files = snapshot(&out);
    assert!(
        !files.keys().any(|k| k.contains("ttl-long-wait")),
        "{:?}",
        files.keys()
    );
    assert!(
        files.contains_key("notes.txt"),
        "a file plancache did not write is kept"
    );
}

/// Runs `args` to completion into `out` and returns the snapshot.
fn complete(args: &[String], out: &Path) -> BTreeMap<String, Vec<u8>> {
    let o = bin().args(args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    snapshot(out)
}

/// Starts `next`, sends SIGTERM at several moments of it (a fresh run each time, moments as
/// fractions in percent of an uninterrupted run's duration, so they cover start, middle and the
/// final moves on any machine), and checks that `out` then holds exactly the previous or the new
/// complete output, with no temporary files.
#[cfg(unix)]
fn interrupt_at_several_moments(
    previous: &[String],
    next: &[String],
    out: &Path,
    percents: &[u64],
) {
    let scratch = out.with_extension("reference");
    let with_out = |args: &[String], dir: &Path| -> Vec<String> {
        args.iter()
            .map(|a| {
                if a == "OUT" {
                    s(dir).to_string()
                } else {
                    a.clone()
                }
            })
            .collect()
    };
    let started = std::time::Instant::now();
    let new = complete(&with_out(next, &scratch), &scratch);
    let full_ms = started.elapsed().as_millis() as u64;
    let mut outcomes = Vec::new();
    for &percent in percents {
        let delay = full_ms * percent / 100;
        let _ = std::fs::remove_dir_all(out);
        let prev = complete(&with_out(previous, out), out);
        assert_ne!(prev, new);
        let mut child = bin()
            .args(with_out(next, out))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        // SAFETY: sends a signal to our own child process.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let status = child.wait().unwrap();
        let now = snapshot(out);
        let temp: Vec<&String> = now
            .keys()
            .filter(|k| k.contains("staging") || k.contains(".tmp-"))
            .collect();
        assert!(
            temp.is_empty(),
            "after {delay} ms: temporary files {temp:?}"
        );
        let which = if now == prev {
            "previous"
        } else if now == new {
            "new"
        } else {
            panic!(
                "after {delay} ms (status {status:?}): neither the previous nor the new output: {:?}",
                now.keys().collect::<Vec<_>>()
            )
        };
        if which == "previous" {
            assert!(!status.success(), "an interrupted run reports failure");
        }
        outcomes.push((delay, which, status.code()));
    }
    eprintln!("{outcomes:?}");
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[cfg(unix)]
#[test]
fn sigterm_during_report_leaves_a_complete_output() {
    let dir = tempfile::tempdir().unwrap();
    interrupt_at_several_moments(
        &strings(&[
            "report",
            "tests/fixtures/ttl-long-wait.toml",
            "--strategy",
            "permission-mode",
            "--out",
            "OUT",
        ]),
        &strings(&["report", "scenarios/auth-plan.toml", "--out", "OUT"]),
        &dir.path().join("rep"),
        &[0, 30, 70, 90, 100, 120],
    );
}

#[cfg(unix)]
#[test]
fn sigterm_during_sweep_leaves_a_complete_output() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.toml", SMALL_SWEEP);
    let b = write(
        dir.path(),
        "b.toml",
        &SMALL_SWEEP
            .replace("seed = 3", "seed = 4")
            .replace("[1, 2, 3]", "[1, 2, 3, 4]"),
    );
    interrupt_at_several_moments(
        &strings(&["sweep", s(&a), "--out", "OUT"]),
        &strings(&["sweep", s(&b), "--out", "OUT"]),
        &dir.path().join("sw"),
        &[0, 50, 90, 100, 130],
    );
}

#[cfg(unix)]
#[test]
fn sigterm_during_generate_count_leaves_a_complete_output() {
    let dir = tempfile::tempdir().unwrap();
    interrupt_at_several_moments(
        &strings(&["generate", "--seed", "1", "--count", "5", "--out", "OUT"]),
        // 40 files: the moments are fractions of the full run, so they still fall before, among
        // and after the file writes and the final move (300 files took 107 s of this test).
        &strings(&["generate", "--seed", "100", "--count", "40", "--out", "OUT"]),
        &dir.path().join("gen"),
        &[0, 40, 80, 95, 105, 130],
    );
}

#[test]
fn generator_parameters_at_their_limits_are_refused_not_aborted() {
    // The largest values `validate` allows on their own: 10000 rejections rewrite a growing
    // plan 10001 times (quadratic content), 10000 rounds of 256 calls of 20 M tokens.
    let o = run(&["generate", "--rejections", "10000"]);
    bad_input(
        &o,
        &["rejections", "limit of 25000000", "--max-session-tokens"],
    );
    let dir = tempfile::tempdir().unwrap();
    let params = write(
        dir.path(),
        "max.toml",
        "exploration_rounds = 10000\nimplementation_turns = 10000\nrejections = 10000\nsubagents = 256\nsubagent_rounds = 10000\nmax_parallel_calls = 256\nresult_tokens = { min = 20000000, max = 20000000 }\n",
    );
    let o = run(&["generate", "--params", s(&params)]);
    bad_input(&o, &["invalid generator parameters", "--max-"]);
}

#[cfg(target_os = "linux")]
#[test]
fn an_endless_input_file_is_refused_at_the_size_limit() {
    // /dev/zero never ends: reading stops one byte past 4 bytes per token of the budget.
    let o = run(&["--max-session-tokens", "1000", "run", "/dev/zero"]);
    bad_input(
        &o,
        &[
            "/dev/zero",
            "larger than 4000 bytes",
            "--max-session-tokens",
        ],
    );
    let o = run(&["--max-session-tokens", "1000", "sweep", "/dev/zero"]);
    bad_input(&o, &["/dev/zero", "sweep file", "larger than 4000 bytes"]);
    let o = run(&[
        "--max-session-tokens",
        "1000",
        "merge",
        "/dev/zero",
        "--out",
        "/nonexistent/x",
    ]);
    bad_input(&o, &["/dev/zero", "shard", "larger than 4000 bytes"]);
    // The pricing, cache-config and baseline files are capped the same way.
    let scenario = "scenarios/auth-plan.toml";
    for (args, what) in [
        (
            vec!["run", scenario, "--pricing", "/dev/zero"],
            "pricing file",
        ),
        (
            vec!["run", scenario, "--cache-config", "/dev/zero"],
            "cache config",
        ),
        (
            vec!["compare", "--baseline", "/dev/zero", scenario],
            "baseline",
        ),
    ] {
        let mut all = vec!["--max-session-tokens", "1000"];
        all.extend(args);
        let o = run(&all);
        bad_input(&o, &["/dev/zero", what, "larger than 4000 bytes"]);
    }
}

#[test]
fn keepalive_pings_of_a_long_wait_are_refused_by_the_step_budget() {
    let dir = tempfile::tempdir().unwrap();
    // 3650 days / 1 ms = 315360000000 pings, each a request: far above 100000 steps.
    let body = format!("{HEAD}[[steps]]\nuser = {{ tokens = 5 }}\n[[steps]]\nassistant = {{ tokens = 5 }}\n[[steps]]\nwait = {{ duration = \"3650days\", keepalive = \"1ms\" }}\n[[steps]]\nuser = {{ tokens = 5 }}\n[[steps]]\nassistant = {{ tokens = 5 }}\n");
    let f = write(dir.path(), "pings.toml", &body);
    let o = run(&["run", s(&f)]);
    bad_input(
        &o,
        &[
            "pings.toml",
            "steps[3].wait.keepalive (315360000000 pings)",
            "--max-steps",
        ],
    );
}
