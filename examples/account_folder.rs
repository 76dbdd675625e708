//! Builds a synthetic account (copies of the bundled transcripts with shifted timestamps, spread
//! over projects like `~/.claude/projects`), runs `account` on it with the default what-if grid,
//! and prints the size, the time of each phase and the peak memory.
//!
//! `cargo run --release --example account_folder -- [SESSIONS] [DIR]`
//! (default 1000 sessions in a temporary folder; with DIR the folder is kept, so
//! `plancache account DIR/projects DIR/codex` can be run on it afterwards).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use plancache::account::synthetic::{self, Layout};
use plancache::account::{self, whatif, AccountOptions};
use plancache::engine::ReplayEnv;
use plancache::import::discover;
use plancache::prompt::Ttl;

/// Peak resident memory of this process (Linux `VmHWM`), in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU time (user + system) this process has used so far, in seconds: on a busy shared machine
/// the wall time says more about the neighbours than about plancache.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return f64::NAN;
    }
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sessions: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let keep = args.next().map(PathBuf::from);
    let tmp = tempfile::tempdir().expect("temporary folder");
    let dir = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let sources: Vec<PathBuf> = [
        "plan_mode.jsonl",
        "breaks.jsonl",
        "sidechains.jsonl",
        "codex_rollout.jsonl",
        "dkimuson_1af7fc5e.jsonl",
        "dkimuson_5c0375b4.jsonl",
        "dkimuson_fe5e1c67.jsonl",
    ]
    .iter()
    .map(|n| fixtures.join(n))
    .collect();
    // One session every 7 minutes: about 5 days for 1000 sessions, many within a TTL of another.
    let written = synthetic::write_account(
        &dir,
        &sources,
        &Layout {
            sessions,
            spacing: Duration::from_secs(7 * 60),
            start_ms: 1_759_312_800_000,
            projects: 12,
        },
    )
    .unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    // The bundled table has no entry for the Codex fixture's model: price it as gpt-5.
    let pricing = dir.join("codex-pricing.toml");
    std::fs::write(&pricing, "[[models]]\nname = \"gpt-5-codex\"\nprovider = \"openai\"\ninput = 1.25\noutput = 10.0\nwrite_5m = 1.0\nwrite_1h = 1.0\nread = 0.1\n").expect("writes");
    let mut env = ReplayEnv::default();
    env.prices.merge_file(&pricing).expect("pricing");

    let t0 = Instant::now();
    let mut found = Vec::new();
    for root in &written.roots {
        found.extend(discover::discover(root).expect("discovers"));
    }
    let discovered = t0.elapsed();
    let strategies: Vec<String> = plancache::strategy::all()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    let keepalives = [
        None,
        whatif::parse_keepalive("4m30s", Duration::from_secs(3600)).expect("interval"),
    ];
    let opts = AccountOptions {
        whatif: whatif::grid(&strategies, &[Ttl::FiveMinutes, Ttl::OneHour], &keepalives),
        ..AccountOptions::default()
    };
    let cpu0 = cpu_seconds();
    let t1 = Instant::now();
    let a =
        account::run(&found, &opts, &env, &indicatif::ProgressBar::hidden()).expect("account runs");
    let ran = t1.elapsed();
    let cpu = cpu_seconds() - cpu0;
    let t2 = Instant::now();
    let md = account::report::markdown(&a, &env.prices, 20);
    let chart = plancache::chart::svg(&account::report::cost_by_day(&a)).expect("chart");
    let html = account::report::html(&a, &env.prices, 20, &chart);
    let reported = t2.elapsed();
    let total = aggregate_requests(&a);
    println!(
        "{} sessions, {} files, {:.1} MB, {} requests; {} replays per session (harness + {} what-if settings); {} threads",
        a.sessions.len(),
        a.files,
        a.bytes as f64 / 1e6,
        total,
        1 + opts.whatif.len(),
        opts.whatif.len(),
        rayon::current_num_threads()
    );
    println!(
        "discover {:.2} s, read + place + replay {:.2} s wall / {:.2} s CPU, report {:.2} s ({} + {} bytes); peak RSS {:.0} MB",
        discovered.as_secs_f64(),
        ran.as_secs_f64(),
        cpu,
        reported.as_secs_f64(),
        md.len(),
        html.len(),
        peak_rss_mb().unwrap_or(f64::NAN)
    );
    if !a.failures.is_empty() {
        println!(
            "{} sessions not replayed, e.g. {:?}",
            a.failures.len(),
            a.failures[0]
        );
    }
    if keep.is_some() {
        println!("folder kept: {}", dir.display());
    }
}

fn aggregate_requests(a: &account::Account) -> usize {
    a.sessions.iter().map(|s| s.requests.len()).sum()
}
