//! `account` over a synthetic account folder: read + place + replay of every session under the
//! harness's setting and the what-if grid. The full-size target (1,000 session files, ~120 MB,
//! < 10 s on 2 cores, < 500 MB) is measured with the `account_folder` example
//! (`cargo run --release --example account_folder`); this bench keeps a smaller folder so a
//! quick run stays short: 70 sessions (ten copies of each bundled transcript). The billed view
//! (`--billed-only`: no replay) is measured beside the full run on the same folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use plancache::account::synthetic::{self, Layout};
use plancache::account::{self, whatif, AccountOptions};
use plancache::engine::ReplayEnv;
use plancache::import::discover;
use plancache::prompt::Ttl;

fn bench(c: &mut Criterion) {
    // As the CLI runs: memory freed by one replay kept for the next.
    plancache::util::heap::keep_freed_memory();
    let tmp = tempfile::tempdir().expect("temporary folder");
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
    let written = synthetic::write_account(
        tmp.path(),
        &sources,
        &Layout {
            sessions: 70,
            spacing: Duration::from_secs(7 * 60),
            start_ms: 1_759_312_800_000,
            projects: 4,
        },
    )
    .expect("writes");
    let pricing = tmp.path().join("codex-pricing.toml");
    std::fs::write(&pricing, "[[models]]\nname = \"gpt-5-codex\"\nprovider = \"openai\"\ninput = 1.25\noutput = 10.0\nwrite_5m = 1.0\nwrite_1h = 1.0\nread = 0.1\n").expect("writes");
    let mut env = ReplayEnv::default();
    env.prices.merge_file(&pricing).expect("pricing");
    let mut sessions = Vec::new();
    for root in &written.roots {
        sessions.extend(discover::discover(root).expect("discovers"));
    }
    let strategies: Vec<String> = plancache::strategy::all()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    let keepalives = [
        None,
        whatif::parse_keepalive("4m30s", Duration::from_secs(3600)).expect("interval"),
    ];
    let harness_only = AccountOptions::default();
    let billed_only = AccountOptions {
        predict: false,
        ..AccountOptions::default()
    };
    let grid = AccountOptions {
        whatif: whatif::grid(&strategies, &[Ttl::FiveMinutes, Ttl::OneHour], &keepalives),
        ..AccountOptions::default()
    };
    let bar = indicatif::ProgressBar::hidden();
    let mut g = c.benchmark_group("account");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(written.bytes));
    // The billed view (ccusage's figures: read, group, price; no replay), then the daily table.
    g.bench_function("70 sessions, billed only + daily table", |b| {
        b.iter(|| {
            let a = account::run(&sessions, &billed_only, &env, &bar).expect("runs");
            account::table::render(&a, account::views::View::Daily)
        })
    });
    g.bench_function("70 sessions, harness setting", |b| {
        b.iter(|| account::run(&sessions, &harness_only, &env, &bar).expect("runs"))
    });
    g.bench_function("70 sessions, harness + 28 what-if settings", |b| {
        b.iter(|| account::run(&sessions, &grid, &env, &bar).expect("runs"))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
