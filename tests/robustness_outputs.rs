//! Outputs never destroy what a user points plancache at (issue 19, items 1, 2, 4 and 7): a
//! device, FIFO or socket is written through or refused, never replaced by the write-and-rename;
//! an output naming an input, or two outputs naming one file, are refused before any work;
//! multi-file outputs of `validate` and `account` are transactions; overlapping inputs are read
//! once; a folder with entries that cannot be read still reports the rest.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts exit 2, no panic, and that stderr names every fragment.
fn bad_input(o: &Output, fragments: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for f in fragments {
        assert!(err.contains(f), "missing `{f}` in:\n{err}");
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(s(p)).unwrap();
    // SAFETY: creates a FIFO at a path inside our temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

const TRANSCRIPTS: &str = "tests/fixtures/transcripts";

/// Every command with a file output, pointed at a symlink to `/dev/null` (as `/dev/stdout` and
/// `/proc/self/fd/1` are symlinks to a device or a pipe): each succeeds and the link is still a
/// link (the old write-and-rename replaced it with a regular file, and as root replaced the
/// device itself when given its path).
#[test]
fn a_device_output_is_written_through_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("base");
    let o = run(&[
        "run",
        "scenarios/auth-plan.toml",
        "--strategy",
        "permission-mode",
        "--out",
        s(&baseline),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let link = dir.path().join("null-link");
    let transcript = format!("{TRANSCRIPTS}/breaks.jsonl");
    let summary = baseline.join("summary.csv");
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "run",
            "scenarios/auth-plan.toml",
            "--strategy",
            "permission-mode",
            "--export-json",
        ],
        vec![
            "compare",
            "--baseline",
            s(&summary),
            "--current",
            s(&summary),
            "--out",
        ],
        vec!["generate", "--seed", "3", "--out"],
        vec!["import", "claude-code", &transcript, "--out"],
        vec![
            "export",
            "mooncake",
            "scenarios/auth-plan.toml",
            "--strategy",
            "permission-mode",
            "--out",
        ],
        vec!["schema", "--out"],
    ];
    for mut args in cases {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        args.push(s(&link));
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(is_symlink(&link), "{args:?} replaced the link");
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }
}

/// A FIFO output is a stream: the reader at the other end gets the CSV, and the FIFO stays.
#[test]
fn a_fifo_output_is_streamed_to_its_reader() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.csv");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = run(&[
        "run",
        "scenarios/auth-plan.toml",
        "--strategy",
        "permission-mode",
        "--export-csv",
        s(&fifo),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = reader.join().unwrap();
    // The header and one row: one scenario, one strategy, one cache model.
    assert!(got.starts_with("scenario,"), "{got}");
    assert_eq!(got.lines().count(), 2, "{got}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

/// A socket is neither a file nor a stream plancache can open: refused before any work, and left.
#[test]
fn a_socket_output_is_refused_before_work_and_left_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("out.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let started = Instant::now();
    let o = run(&["run", "scenarios/auth-plan.toml", "--export-json", s(&sock)]);
    bad_input(&o, &["--export-json", "out.sock", "is a socket"]);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());
    let o = run(&["generate", "--seed", "1", "--out", s(&sock)]);
    bad_input(&o, &["is a socket"]);
}

/// `import --out` naming the transcript being read used to replace the transcript with the
/// scenario; a symlink to it is the same file.
#[test]
fn an_output_naming_an_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    std::fs::copy(format!("{TRANSCRIPTS}/breaks.jsonl"), &t).unwrap();
    let before = std::fs::read(&t).unwrap();
    let o = run(&["import", "claude-code", s(&t), "--out", s(&t)]);
    bad_input(&o, &["--out", "is also an input"]);
    let alias = dir.path().join("alias.toml");
    std::os::unix::fs::symlink(&t, &alias).unwrap();
    let o = run(&["import", "claude-code", s(&t), "--out", s(&alias)]);
    bad_input(&o, &["is also an input"]);
    assert_eq!(std::fs::read(&t).unwrap(), before);
    // A scenario given to `run` and named by an export.
    let sc = dir.path().join("a.toml");
    std::fs::copy("scenarios/auth-plan.toml", &sc).unwrap();
    let text = std::fs::read(&sc).unwrap();
    let o = run(&["run", s(&sc), "--export-markdown", s(&sc)]);
    bad_input(&o, &["--export-markdown", "is also an input"]);
    assert_eq!(std::fs::read(&sc).unwrap(), text);
}

#[test]
fn two_exports_naming_one_file_are_refused_before_work() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("both");
    let o = run(&[
        "run",
        "scenarios/auth-plan.toml",
        "--export-json",
        s(&f),
        "--export-csv",
        s(&dir.path().join(".").join("both")),
    ]);
    bad_input(&o, &["--export-json", "--export-csv", "name one file"]);
    assert!(!f.exists(), "nothing written");
}

/// `--out -` used to create a folder named `-`; `--out FILE` failed only after the replay.
#[test]
fn validate_and_account_check_out_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "keep").unwrap();
    let transcript = format!("{TRANSCRIPTS}/breaks.jsonl");
    let projects = format!("{TRANSCRIPTS}/projects");
    for args in [
        vec!["validate", &transcript],
        vec!["account", &projects, "--strategies", "none"],
    ] {
        let mut abs = vec![args[0]];
        let here = env!("CARGO_MANIFEST_DIR");
        let a1 = format!("{here}/{}", args[1]);
        abs.push(&a1);
        abs.extend(&args[2..]);
        // Run where `-` would be created.
        let o = bin()
            .args(&abs)
            .args(["--out", "-"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        bad_input(&o, &["--out takes a directory, not `-`"]);
        assert!(!dir.path().join("-").exists(), "{args:?} created `-`");
        let started = Instant::now();
        let mut with = args.clone();
        with.extend(["--out", s(&file)]);
        let o = run(&with);
        bad_input(&o, &["a-file", "exists and is not a directory"]);
        // Refused before the replay: no tokenizer load, no transcript read.
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{:?}",
            started.elapsed()
        );
        assert!(o.stdout.is_empty(), "no report printed before the refusal");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
    }
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

fn with_out(args: &[&str], dir: &Path) -> Vec<String> {
    args.iter()
        .map(|a| if *a == "OUT" { s(dir) } else { a }.to_string())
        .collect()
}

fn complete(args: &[String], out: &Path) -> BTreeMap<String, Vec<u8>> {
    let o = bin().args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    snapshot(out)
}

/// A small xorshift, seeded from the clock (printed, so a failure can be replayed with
/// `PLANCACHE_SIGTERM_SEED`).
fn delays(full_ms: u64, n: usize) -> Vec<u64> {
    let seed = std::env::var("PLANCACHE_SIGTERM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("PLANCACHE_SIGTERM_SEED={seed}");
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // 0 % to 130 % of an uninterrupted run.
            x % (full_ms * 13 / 10 + 1)
        })
        .collect()
}

/// Runs `previous` into OUT, then `next` killed by SIGTERM after a random delay, several times:
/// OUT holds exactly the previous or the new complete set each time, with no temporary files.
fn sigterm_leaves_old_or_new(previous: &[&str], next: &[&str], out: &Path) {
    let scratch = out.with_extension("reference");
    let started = Instant::now();
    let new = complete(&with_out(next, &scratch), &scratch);
    let full_ms = started.elapsed().as_millis() as u64;
    let mut outcomes = Vec::new();
    for delay in delays(full_ms, 5) {
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
            assert!(!status.success(), "an interrupted run reports failure");
            "previous"
        } else if now == new {
            "new"
        } else {
            panic!(
                "after {delay} ms ({status:?}): a mix of the previous and the new output: {:?}",
                now.keys().collect::<Vec<_>>()
            )
        };
        outcomes.push((delay, which));
    }
    eprintln!("{outcomes:?}");
}

#[test]
fn sigterm_during_validate_out_leaves_the_old_or_the_new_pair() {
    let dir = tempfile::tempdir().unwrap();
    sigterm_leaves_old_or_new(
        &[
            "validate",
            "tests/fixtures/transcripts/breaks.jsonl",
            "--out",
            "OUT",
        ],
        &[
            "validate",
            "tests/fixtures/transcripts/plan_mode.jsonl",
            "--out",
            "OUT",
        ],
        &dir.path().join("v"),
    );
}

#[test]
fn sigterm_during_account_out_leaves_the_old_or_the_new_set() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a/-x");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::copy(format!("{TRANSCRIPTS}/breaks.jsonl"), a.join("s.jsonl")).unwrap();
    let a = dir.path().join("a");
    sigterm_leaves_old_or_new(
        &["account", s(&a), "--strategies", "none", "--out", "OUT"],
        &[
            "account",
            "tests/fixtures/transcripts/projects",
            "--strategies",
            "none",
            "--out",
            "OUT",
        ],
        &dir.path().join("acct"),
    );
}
