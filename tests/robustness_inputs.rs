//! Issue #19 items 3, 6 and 7, and #17 item 6 (non-UTF-8 regions): memory bounded by distinct
//! content, exit codes for bad input and for a standard output that is closed or fails, folder
//! runs that list what they could not read and read the rest, and lines that are not UTF-8
//! skipped one by one.
//!
//! Each CLI case runs the binary under `prlimit --as=500000000` (500 MB of address space) and
//! `--cpu=N` (N seconds of CPU time, then SIGXCPU), so a case that grows with pings or with
//! the file size, or that spins, fails here whatever the load of the machine; a wall-clock
//! deadline of 60 s catches a case that blocks (a FIFO opened for reading).

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use plancache::import::discover::{discover_readable, NotRead};
use plancache::import::{claude_code, codex, Harness};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures/transcripts").join(rel)
}

/// What a limited run gave: its status, standard output and error, wall-clock time.
struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// Runs `plancache ARGS` in `dir` under 500 MB of address space and `cpu_s` seconds of CPU.
fn limited(dir: &Path, cpu_s: u32, args: &[&str]) -> Outcome {
    let mut cmd = Command::new("prlimit");
    cmd.arg("--as=500000000")
        .arg(format!("--cpu={cpu_s}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    wait_for(cmd)
}

/// Waits for `cmd` at most 60 s (then kills it), collecting its outputs.
fn wait_for(mut cmd: Command) -> Outcome {
    let start = Instant::now();
    let mut child = cmd.spawn().expect("the command starts");
    let collect = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let mut bytes = Vec::new();
                let _ = r.read_to_end(&mut bytes);
                s = String::from_utf8_lossy(&bytes).into_owned();
            }
            s
        })
    };
    let out = collect(child.stdout.take().map(|r| Box::new(r) as _));
    let err = collect(child.stderr.take().map(|r| Box::new(r) as _));
    let status = loop {
        if let Some(s) = child.try_wait().expect("waits") {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            break child.wait().expect("waits");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed: start.elapsed(),
    }
}

/// A session whose system prompt is 1,000,000 tokens, then a 200-minute wait with a ping every
/// minute. The ping after the assistant's reply is due 1 min after that request was sent, the
/// next every minute after, while before the wait's end (the wait starts when the reply has
/// completed, seconds after it was sent): pings at 1, 2, ..., 200 min, so 200 pings, each
/// re-sending the whole prompt. Copied per ping that is 200 x 4 MB of token ids (800 MB).
const BIG_SYSTEM_PINGS: &str = r#"name = "bigsys"
model = "claude-sonnet-4-5"
system = [{ tokens = 1000000 }]

[[tools]]
name = "Read"
tokens = 450

[[steps]]
user = { tokens = 100 }

[[steps]]
assistant = { tokens = 50 }

[[steps]]
wait = { duration = "200m", keepalive = "1m" }

[[steps]]
user = { tokens = 100 }

[[steps]]
assistant = { tokens = 50 }
"#;

#[test]
fn pings_share_the_prefix_they_resend_in_export_mooncake() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bigsys.toml"), BIG_SYSTEM_PINGS).unwrap();
    let o = limited(
        dir.path(),
        2,
        &[
            "export",
            "mooncake",
            "bigsys.toml",
            "--strategy",
            "permission-mode",
            "--out",
            "trace.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
    let text = std::fs::read_to_string(dir.path().join("trace.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Two assistant requests and the 200 pings between them.
    assert_eq!(lines.len(), 202);
    // The prompt: 450 tool + 1,000,000 system + 100 user tokens = 1,000,550; a 512-token block
    // size gives ceil(1,000,550 / 512) = 1,955 block ids. Every ping re-sends it unchanged.
    assert_eq!(lines[0]["input_length"], 1_000_550);
    assert_eq!(lines[0]["hash_ids"].as_array().unwrap().len(), 1_955);
    for ping in &lines[1..201] {
        assert_eq!(ping["input_length"], lines[0]["input_length"]);
        assert_eq!(ping["hash_ids"], lines[0]["hash_ids"]);
        assert_eq!(ping["output_length"], 1);
    }
    assert!(o.elapsed < Duration::from_secs(60));
}

#[test]
fn sweep_pings_are_counted_against_the_step_budget_before_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ka.toml"),
        "name = \"ka\"\n[base]\nseed = 7\nmodel = \"claude-sonnet-4-5\"\n[grid]\nreview_wait = [\"70m\"]\nkeepalive = [\"1ms\"]\nstrategy = [\"permission-mode\"]\ncache = [\"anthropic\"]\n",
    )
    .unwrap();
    let o = limited(dir.path(), 2, &["sweep", "ka.toml", "--out", "out"]);
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    // A 70-minute review wait pinged every millisecond: 70 x 60,000 = 4,200,000 pings, above
    // the 100,000 steps of the default budget.
    assert!(o.stderr.contains("4200000 pings"), "{}", o.stderr);
    assert!(o.stderr.contains("point 1"), "{}", o.stderr);
    assert!(o.stderr.contains("--max-steps"), "{}", o.stderr);
    assert!(!dir.path().join("out/sweep.csv").exists());
}

/// `breaks.jsonl` (14 lines) followed by 300 lines of 1 MiB of NUL bytes each (valid UTF-8,
/// not JSON). The file is sparse: only the newline blocks take disk space (about 1 MB for a
/// 315 MB file).
fn large_transcript(dir: &Path) -> PathBuf {
    use std::io::{Seek, SeekFrom, Write};
    let path = dir.join("large.jsonl");
    let mut bytes = std::fs::read(fixture("breaks.jsonl")).unwrap();
    while bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    bytes.push(b'\n');
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&bytes).unwrap();
    let mut end = bytes.len() as u64;
    for _ in 0..300 {
        end += 1 << 20;
        f.seek(SeekFrom::Start(end)).unwrap();
        f.write_all(b"\n").unwrap();
        end += 1;
    }
    path
}

#[test]
fn validate_reads_a_transcript_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = large_transcript(dir.path());
    // 315 MB: read whole (as before) it does not fit in 500 MB beside the binary ("out of
    // memory", exit 2); read a line at a time it takes a 1 MiB buffer. The budget is raised so the file is within the input limit
    // (4 bytes per token: 400 MB). CPU: a clean `validate` of the 14-line fixture alone takes
    // about 1.7 s of CPU in the debug build (the tokenizer loads), so the bound is 4 s.
    let o = limited(
        dir.path(),
        4,
        &[
            "--max-session-tokens",
            "100000000",
            "validate",
            path.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("# Validation"), "{}", o.stdout);
    // The library reader: every request of the fixture, and the 300 lines skipped one by one.
    // The same raised budget (the other tests of this binary read small files or run the CLI).
    plancache::budget::Budget::set_current(plancache::budget::Budget {
        max_session_tokens: 100_000_000,
        ..plancache::budget::Budget::current()
    });
    let t = Harness::ClaudeCode.read(&path).unwrap();
    let reference = claude_code::parse(&std::fs::read_to_string(fixture("breaks.jsonl")).unwrap());
    assert_eq!(
        format!("{:?}", t.streams),
        format!("{:?}", reference.streams)
    );
    assert_eq!(t.lines, reference.lines + 300);
    let bad: Vec<usize> = t
        .skipped
        .iter()
        .filter(|s| s.reason.starts_with("not a JSON record"))
        .map(|s| s.line)
        .collect();
    assert_eq!(bad, (15..=314).collect::<Vec<_>>());
}

/// `text` with the lines in `blank` (1-based) emptied: what a reader that skips exactly those
/// lines must see.
fn without_lines(text: &str, blank: &[usize]) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| if blank.contains(&(i + 1)) { "" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_region_that_is_not_utf8_skips_its_lines_not_the_file() {
    // breaks.jsonl with lines 9 and 10 (two user records) given 4 bytes that are not UTF-8
    // (ff fe c3 28) inside their content: bytes 318 and 262 of those lines.
    let path = fixture("not_utf8/breaks_latin1.jsonl");
    let t = Harness::ClaudeCode.read(&path).unwrap();
    let clean = std::fs::read_to_string(fixture("breaks.jsonl")).unwrap();
    let reference = claude_code::parse(&without_lines(&clean, &[9, 10]));
    // Every other line imports as it would without those two lines.
    assert_eq!(
        format!("{:?}", t.streams),
        format!("{:?}", reference.streams)
    );
    assert!(!t.streams.is_empty());
    // The 14 lines were read; the two are skipped, with the column where the text stops.
    assert_eq!(t.lines, 14);
    assert_eq!(t.lines, reference.lines + 2);
    let bad: Vec<(usize, String)> = t
        .skipped
        .iter()
        .filter(|s| s.reason.contains("not UTF-8"))
        .map(|s| (s.line, s.reason.clone()))
        .collect();
    assert_eq!(
        bad,
        vec![
            (
                9,
                "not UTF-8 text (invalid byte at column 318); the line is skipped".to_string()
            ),
            (
                10,
                "not UTF-8 text (invalid byte at column 262); the line is skipped".to_string()
            ),
        ]
    );
    assert_eq!(t.skipped.len(), reference.skipped.len() + 2);

    // The Codex rollout: line 8 (the assistant's message) has them at byte 156.
    let path = fixture("not_utf8/rollout-not-utf8.jsonl");
    let t = Harness::Codex.read(&path).unwrap();
    let clean = std::fs::read_to_string(fixture("codex_rollout.jsonl")).unwrap();
    let reference = codex::parse(&without_lines(&clean, &[8]));
    assert_eq!(
        format!("{:?}", t.streams),
        format!("{:?}", reference.streams)
    );
    assert_eq!(t.lines, 11);
    assert_eq!(t.skipped.len(), reference.skipped.len() + 1);
    assert!(t.skipped.iter().any(|s| s.line == 8
        && s.reason == "not UTF-8 text (invalid byte at column 156); the line is skipped"));

    // At the CLI: validate scores the file (it used to refuse it whole, exit 2).
    let o = limited(
        &root(),
        4,
        &[
            "validate",
            "tests/fixtures/transcripts/not_utf8/breaks_latin1.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
}

#[test]
fn generate_parameters_that_overflow_the_clock_are_bad_input() {
    let o = limited(
        &root(),
        4,
        &["generate", "--review-wait", "18446744073709551s"],
    );
    // Exit 2 (bad input), not 1 (the code of a failed check).
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("clock overflows"), "{}", o.stderr);
    assert!(o.stderr.contains("--review-wait"), "{}", o.stderr);
}

/// `plancache ARGS` with descriptor 1 closed (`>&-`).
fn with_stdout_closed(args: &[&str], dir: &Path) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plancache"));
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: only closes a descriptor between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    wait_for(cmd)
}

#[test]
fn a_closed_or_failing_standard_output_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = root().join("scenarios/auth-plan.toml");
    let s = scenario.to_str().unwrap();
    // `run ... >&-`: the table cannot be shown.
    let o = with_stdout_closed(&["run", s, "--strategy", "permission-mode"], dir.path());
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("cannot write to standard output: it is closed"),
        "{}",
        o.stderr
    );
    // A command that prints nothing to standard output is not affected.
    let o = with_stdout_closed(
        &[
            "export",
            "mooncake",
            s,
            "--strategy",
            "permission-mode",
            "--out",
            "t.jsonl",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
    assert!(dir.path().join("t.jsonl").is_file());
    // A pipe whose reader has gone: exit 2 with the error, not death by SIGPIPE.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plancache"));
    cmd.args(["run", s, "--strategy", "permission-mode"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), None, "{err}");
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("Broken pipe"), "{err}");
}

/// A copy of the `-repo` project (one session: s1.jsonl and two subagent files) with five
/// entries named `*.jsonl` that are not readable regular files.
fn project_with_bad_entries(dir: &Path) -> PathBuf {
    let p = dir.join("-repo");
    let src = fixture("projects/-repo");
    std::fs::create_dir_all(p.join("s1/subagents")).unwrap();
    for f in [
        "s1.jsonl",
        "s1/subagents/agent-a1f.jsonl",
        "s1/subagents/agent-b2e.jsonl",
    ] {
        std::fs::copy(src.join(f), p.join(f)).unwrap();
    }
    let fifo = std::ffi::CString::new(p.join("fifo.jsonl").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let _sock = std::os::unix::net::UnixListener::bind(p.join("sock.jsonl")).unwrap();
    std::os::unix::fs::symlink("loop.jsonl", p.join("loop.jsonl")).unwrap();
    std::os::unix::fs::symlink("nowhere.jsonl", p.join("dangling.jsonl")).unwrap();
    std::os::unix::fs::symlink("s1", p.join("dir.jsonl")).unwrap();
    p
}

fn expected_not_read(p: &Path) -> Vec<NotRead> {
    [
        (
            "dangling.jsonl",
            "a dangling symbolic link (to nowhere.jsonl)",
        ),
        ("dir.jsonl", "a symbolic link to a folder (not followed)"),
        ("fifo.jsonl", "a FIFO, not a regular file"),
        ("loop.jsonl", "a symbolic link loop"),
        ("sock.jsonl", "a socket, not a regular file"),
    ]
    .into_iter()
    .map(|(f, r)| NotRead {
        path: p.join(f),
        reason: r.to_string(),
    })
    .collect()
}

#[test]
fn folder_runs_list_what_they_cannot_read_and_read_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let p = project_with_bad_entries(dir.path());
    let found = discover_readable(&p).unwrap();
    assert_eq!(found.not_read, expected_not_read(&p));
    // The rest is the one session, with its main file and both subagent files.
    assert_eq!(found.sessions.len(), 1);
    assert_eq!(found.sessions[0].files().len(), 3);
    assert_eq!(found.sessions[0].main, Some(p.join("s1.jsonl")));
    for cmd in ["account", "validate"] {
        let o = limited(dir.path(), 6, &[cmd, "./-repo"]);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", o.stderr);
        assert!(
            o.stderr
                .contains("not read (5 entries; the rest was read):"),
            "{cmd}: {}",
            o.stderr
        );
        for n in expected_not_read(Path::new("./-repo")) {
            assert!(
                o.stderr.contains(&n.to_string()),
                "{cmd}: {n}\n{}",
                o.stderr
            );
        }
        assert!(!o.stdout.is_empty(), "{cmd}");
    }
    let o = limited(dir.path(), 6, &["account", "./-repo"]);
    // The account report counts the one session and its three files.
    assert!(o.stdout.contains("1 sessions (3 files"), "{}", o.stdout);
}

#[test]
fn an_unreadable_file_is_listed_too() {
    // Root reads any file whatever its mode: the case needs another user.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: running as root, a mode-000 file is still readable");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("-repo");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::copy(fixture("projects/-repo/s1.jsonl"), p.join("s1.jsonl")).unwrap();
    std::fs::write(p.join("locked.jsonl"), "{}\n").unwrap();
    std::fs::set_permissions(
        p.join("locked.jsonl"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let found = discover_readable(&p).unwrap();
    assert_eq!(found.not_read.len(), 1);
    assert_eq!(found.not_read[0].path, p.join("locked.jsonl"));
    assert!(found.not_read[0].reason.starts_with("cannot read: "));
    assert_eq!(found.sessions.len(), 1);
}

#[test]
fn run_refuses_an_export_that_names_a_file_of_its_out_folder() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = root().join("scenarios/auth-plan.toml");
    let o = limited(
        dir.path(),
        4,
        &[
            "run",
            scenario.to_str().unwrap(),
            "--strategy",
            "permission-mode",
            "--out",
            "D",
            "--export-csv",
            "D/summary.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("--export-csv D/summary.csv and --out D/summary.csv name one file"),
        "{}",
        o.stderr
    );
    // Refused before work: nothing written.
    assert!(!dir.path().join("D").exists());
}

#[test]
fn import_out_dash_is_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let o = limited(
        dir.path(),
        4,
        &[
            "import",
            "claude-code",
            fixture("breaks.jsonl").to_str().unwrap(),
            "--out",
            "-",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
    assert!(
        o.stdout.starts_with("# Imported by `plancache import`"),
        "{}",
        o.stdout
    );
    assert!(!dir.path().join("-").exists());
}

/// A scenario whose first step is `steps[0]`, then a request.
fn scenario_with_first(dir: &Path, name: &str, first: &str) -> PathBuf {
    let body = format!(
        "name = \"{name}\"\nmodel = \"claude-sonnet-4-5\"\nsystem = {{ tokens = 7000 }}\n[[tools]]\nname = \"Read\"\ntokens = 420\n[[steps]]\n{first}\n[[steps]]\nuser = {{ tokens = 5 }}\n[[steps]]\nassistant = {{ tokens = 5 }}\n"
    );
    let f = dir.join(format!("{name}.toml"));
    std::fs::write(&f, body).unwrap();
    f
}

#[test]
fn a_keepalive_wait_before_the_first_request_sends_no_pings_and_is_not_refused() {
    // 1,000 days at 1 ms would be 86,400,000,000 pings if counted; the stream has sent nothing
    // to keep warm (docs/scenario-format.md), so the replay sends none and the budget counts none.
    let dir = tempfile::tempdir().unwrap();
    let f = scenario_with_first(
        dir.path(),
        "early",
        "wait = { duration = \"1000days\", keepalive = \"1ms\" }",
    );
    let o = limited(dir.path(), 20, &["run", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", o.stderr);
    // One request: the assistant reply; no ping.
    let row = o.stdout.lines().nth(1).expect("a summary row");
    let reqs: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(reqs[3], "1", "{}", o.stdout);
}

#[test]
fn a_content_file_that_is_a_device_is_refused_by_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("dev.toml");
    std::fs::write(
        &f,
        "name = \"dev\"\nmodel = \"claude-sonnet-4-5\"\nsystem = { tokens = 7000 }\n[[tools]]\nname = \"Read\"\ntokens = 420\n[[steps]]\nuser = { tokens = 5 }\n[[steps]]\nassistant = { tokens = 5 }\n[[steps]]\nedit_system = { block = 1, file = \"/dev/zero\" }\n[[steps]]\nuser = { tokens = 5 }\n[[steps]]\nassistant = { tokens = 5 }\n",
    )
    .unwrap();
    let o = limited(dir.path(), 20, &["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("`/dev/zero` is not a regular file")
            && !o.stderr.contains("does not exist"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("step 3"), "{}", o.stderr);
}
