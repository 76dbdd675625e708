//! `account`: a synthetic projects folder made from the bundled transcripts, replayed on one
//! account timeline; its totals against the per-session `validate` figures; the timeline's
//! shared leading block; the breakdowns with hand-derived numbers; the command line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use plancache::account::aggregate::{self, By};
use plancache::account::figures::Counters;
use plancache::account::synthetic::{self, Layout};
use plancache::account::{
    self, replay, Account, AccountOptions, RequestFigures, SessionOutcome, Sharing,
};
use plancache::cache::PriceTable;
use plancache::engine::ReplayEnv;
use plancache::import::discover::{self, SessionFiles, TranscriptKind};
use plancache::import::Harness;
use plancache::validate::{validate_session, FirstRequest, SharedPrefix, ValidateOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts")
        .join(name)
}

/// 2025-10-01T10:00:00Z in epoch ms.
const START: u64 = 1_759_312_800_000;

fn folder(dir: &Path, sources: &[&str], sessions: usize, spacing: Duration) -> Vec<SessionFiles> {
    let sources: Vec<PathBuf> = sources.iter().map(|s| fixture(s)).collect();
    let written = synthetic::write_account(
        dir,
        &sources,
        &Layout {
            sessions,
            spacing,
            start_ms: START,
            projects: 4,
        },
    )
    .expect("writes");
    let mut all = Vec::new();
    for root in &written.roots {
        all.extend(discover::discover(root).expect("discovers"));
    }
    all
}

/// The bundled table plus the Codex fixture's model, at gpt-5's prices (the bundled table has no
/// `gpt-5-codex` entry).
fn env() -> ReplayEnv {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("pricing.toml");
    std::fs::write(
        &file,
        "[[models]]\nname = \"gpt-5-codex\"\nprovider = \"openai\"\ninput = 1.25\noutput = 10.0\nwrite_5m = 1.0\nwrite_1h = 1.0\nread = 0.1\nmin_cacheable = 1024\n",
    )
    .expect("writes");
    let mut prices = PriceTable::bundled();
    prices.merge_file(&file).expect("merges");
    ReplayEnv {
        prices,
        ..ReplayEnv::default()
    }
}

fn run(sessions: &[SessionFiles], sharing: Sharing) -> Account {
    let opts = AccountOptions {
        sharing,
        ..AccountOptions::default()
    };
    account::run(sessions, &opts, &env(), &indicatif::ProgressBar::hidden()).expect("runs")
}

const ALL: [&str; 7] = [
    "plan_mode.jsonl",
    "breaks.jsonl",
    "sidechains.jsonl",
    "codex_rollout.jsonl",
    "dkimuson_1af7fc5e.jsonl",
    "dkimuson_5c0375b4.jsonl",
    "dkimuson_fe5e1c67.jsonl",
];

#[test]
fn account_totals_equal_the_sum_of_per_session_validate_figures() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // 21 sessions (3 copies of each fixture), one every 10 minutes, over 4 projects: each copy
    // of a fixture lands in another project, and the shared timeline still finds warm starts.
    // (The sum is per request, so more copies only repeat the same additions.)
    let sessions = folder(tmp.path(), &ALL, 21, Duration::from_secs(600));
    assert_eq!(sessions.len(), 21);
    assert_eq!(
        sessions
            .iter()
            .filter(|s| s.kind == TranscriptKind::Codex)
            .count(),
        3
    );
    let a = run(&sessions, Sharing::None);
    assert!(a.failures.is_empty(), "{:?}", a.failures);
    assert_eq!(a.sessions.len(), 21);
    let total = aggregate::overall(&a.sessions);

    // The same sessions one by one through `validate`, cold, every request counted.
    let env = env();
    let mut want_pred = [0u64; 4];
    let mut want_billed = [0u64; 4];
    let (mut want_pred_units, mut want_billed_units) = (0.0, 0.0);
    let (mut want_pred_breaks, mut want_billed_breaks, mut requests) = (0, 0, 0);
    for s in &sessions {
        let cache = match s.kind {
            TranscriptKind::ClaudeCode => "anthropic",
            TranscriptKind::Codex => "openai",
        };
        let opts = ValidateOptions {
            cache: cache.into(),
            first_request: FirstRequest::Include,
            shared_prefix: SharedPrefix::None,
            ..ValidateOptions::default()
        };
        let v = validate_session(s, &opts, &env).expect("validates");
        for c in &v.checks {
            requests += 1;
            for (w, x) in want_pred.iter_mut().zip([
                c.predicted_prompt,
                c.predicted_input,
                c.predicted_creation,
                c.predicted_read,
            ]) {
                *w += x;
            }
            for (w, x) in want_billed.iter_mut().zip([
                c.recorded_prompt,
                c.recorded_input,
                c.recorded_creation,
                c.recorded_read,
            ]) {
                *w += x;
            }
            want_pred_units += c.predicted_units;
            want_billed_units += c.recorded_units;
            want_pred_breaks += usize::from(c.predicted_break);
            want_billed_breaks += usize::from(c.recorded_break);
        }
    }
    let p = &total.predicted;
    let b = &total.billed;
    assert_eq!(p.requests, requests);
    assert_eq!([p.prompt, p.input, p.writes(), p.read], want_pred);
    assert_eq!([b.prompt, b.input, b.writes(), b.read], want_billed);
    assert!((p.units - want_pred_units).abs() < 1e-6 * want_pred_units);
    assert!((b.units - want_billed_units).abs() < 1e-6 * want_billed_units);
    assert_eq!(total.predicted_breaks, want_pred_breaks);
    assert_eq!(total.billed_breaks, want_billed_breaks);
    // The folder is not trivial: three copies of each fixture's request count (Codex: 2).
    assert_eq!(requests, 3 * (7 + 20 + 170 + 2) + 3 * (8 + 5 + 8) as u64);

    // On the shared timeline the billed side does not move; the breakdowns add up to it.
    let shared = run(&sessions, Sharing::Timeline);
    let st = aggregate::overall(&shared.sessions);
    assert_eq!(st.billed, total.billed);
    assert!(shared.sessions.iter().any(|s| s.warm_from.is_some()));
    for by in [By::Day, By::Project, By::Model] {
        let mut sum = Counters::default();
        for (_, t) in aggregate::breakdown(&shared.sessions, by) {
            sum.add(&t.predicted);
        }
        assert_eq!(sum.read, st.predicted.read, "{by:?}");
        assert_eq!(sum.requests, st.predicted.requests, "{by:?}");
    }
    // Sessions the timeline found cold are replayed exactly as alone.
    for (s, alone) in shared.sessions.iter().zip(&a.sessions) {
        assert_eq!(s.files, alone.files);
        if s.warm_from.is_none() {
            assert_eq!(s.requests, alone.requests, "{}", s.files.session_id);
        }
    }
}

#[test]
fn a_session_started_within_the_ttl_reads_the_leading_block_an_earlier_one_left() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // plan_mode.jsonl lasts 10:00:00-10:10:09 and writes 1 h entries. Copies at 10:00, 10:15
    // and 12:00: the second starts 4 min 51 s after the first one's last request (1 h TTL):
    // warm; the third starts 1 h 35 min after the second's last request (10:25:09): cold.
    let sessions = folder(
        tmp.path(),
        &["plan_mode.jsonl"],
        2,
        Duration::from_secs(15 * 60),
    );
    let third_dir = tmp.path().join("later");
    let later = synthetic::write_account(
        &third_dir,
        &[fixture("plan_mode.jsonl")],
        &Layout {
            sessions: 1,
            spacing: Duration::ZERO,
            start_ms: START + 2 * 3_600_000,
            projects: 1,
        },
    )
    .expect("writes");
    let mut all = sessions.clone();
    all.extend(discover::discover(&later.roots[0]).expect("discovers"));
    let a = run(&all, Sharing::Timeline);
    let ids: Vec<&str> = a
        .sessions
        .iter()
        .map(|s| s.files.session_id.as_str())
        .collect();
    assert_eq!(
        ids,
        ["plan_mode-00000", "plan_mode-00001", "plan_mode-00000"]
    );
    let warm: Vec<Option<&str>> = a.sessions.iter().map(|s| s.warm_from.as_deref()).collect();
    assert_eq!(warm, [None, Some("plan_mode-00000"), None]);
    // The first copy's last request (10:10:09, 1 h) keeps the block alive past the second
    // copy's last request (10:25:09): kept warm throughout.
    let kept: Vec<bool> = a.sessions.iter().map(|s| s.kept_warm).collect();
    assert_eq!(kept, [false, true, false]);

    // The leading block is the imported static prefix: the first prompt (3 + 12000 billed =
    // 12003) minus the first user message. Cold, the first request reads nothing; warm, it
    // reads exactly that block and writes only the message part.
    let t = Harness::ClaudeCode
        .read(sessions[0].main.as_ref().unwrap())
        .unwrap();
    let imported = plancache::import::build_scenarios(&t, &Default::default());
    let main = imported.iter().find(|s| s.stream == "main").unwrap();
    let static_prefix: u64 = main
        .scenario
        .system
        .to_vec()
        .iter()
        .map(|b| u64::from(b.tokens.expect("sized block")))
        .sum::<u64>()
        + main
            .scenario
            .tools
            .iter()
            .map(|t| u64::from(t.tokens.unwrap_or(0)))
            .sum::<u64>();
    let cold = &a.sessions[0].requests[0];
    let warm = &a.sessions[1].requests[0];
    assert_eq!(cold.predicted.prompt, 12_003);
    assert_eq!(warm.predicted.prompt, 12_003);
    assert_eq!(cold.predicted.read, 0);
    assert_eq!(warm.predicted.read, static_prefix);
    assert!(static_prefix > 11_000 && static_prefix < 12_003);
    assert_eq!(
        warm.predicted.writes() + warm.predicted.input,
        12_003 - static_prefix
    );
    // From the second request on both sessions hold the same entries: identical predictions.
    let strip = |r: &[RequestFigures]| -> Vec<(u64, u64, u64)> {
        r.iter()
            .skip(1)
            .map(|q| (q.predicted.read, q.predicted.writes(), q.predicted.input))
            .collect()
    };
    assert_eq!(
        strip(&a.sessions[0].requests),
        strip(&a.sessions[1].requests)
    );
    // The cold third session is the first one again.
    assert_eq!(a.sessions[2].requests, {
        let mut r = a.sessions[0].requests.clone();
        for q in &mut r {
            q.sent_at_ms += 2 * 3_600_000;
        }
        r
    });
}

fn request(
    stream: &str,
    n: usize,
    at: u64,
    model: &str,
    pred: [u64; 4],
    billed: [u64; 4],
) -> RequestFigures {
    let prices = PriceTable::bundled();
    // [prompt, input, 5 m writes, read]
    let c = |x: [u64; 4]| Counters::priced(&prices, model, x[0], x[1], x[2], 0, x[3]);
    RequestFigures {
        stream: stream.into(),
        request: n,
        sent_at_ms: at,
        model: model.into(),
        first_in_stream: n == 1,
        billed: c(billed),
        predicted: c(pred),
        output_tokens: 100,
        output_usd: 100.0 * 15.0 / 1e6,
        billed_break: false,
        predicted_break: false,
        reason: String::new(),
    }
}

fn outcome(id: &str, project: &str, requests: Vec<RequestFigures>) -> SessionOutcome {
    SessionOutcome {
        files: SessionFiles {
            kind: TranscriptKind::ClaudeCode,
            session_id: id.into(),
            project: project.into(),
            main: None,
            subagents: Vec::new(),
        },
        bytes: 0,
        warm_from: None,
        kept_warm: false,
        requests,
        skipped_records: 0,
    }
}

#[test]
fn breakdowns_add_requests_up_by_day_project_and_model() {
    const DAY: u64 = 86_400_000;
    let t0 = START; // 2025-10-01
    let m = "claude-sonnet-4-5"; // $3 / Mtok input, $15 output, writes 1.25, reads 0.1
    let mut r2 = request(
        "main",
        2,
        t0 + 60_000,
        m,
        [12_000, 10, 1_990, 10_000],
        [12_000, 10, 2_990, 9_000],
    );
    r2.predicted_break = false;
    let mut r3 = request(
        "main",
        3,
        t0 + DAY,
        m,
        [13_000, 10, 12_990, 0],
        [13_000, 10, 12_990, 0],
    );
    r3.predicted_break = true;
    r3.billed_break = true;
    r3.reason = "messages: ttl expired at step3 (token 0)".into();
    let a = outcome(
        "a",
        "web",
        vec![
            request(
                "main",
                1,
                t0,
                m,
                [10_000, 10, 9_990, 0],
                [10_000, 10, 9_990, 0],
            ),
            r2,
            r3,
        ],
    );
    let b = outcome(
        "b",
        "cli",
        vec![request(
            "main",
            1,
            t0 + 3_600_000,
            m,
            [5_000, 5_000, 0, 0],
            [5_000, 5_000, 0, 0],
        )],
    );
    let sessions = vec![a, b];

    let days = aggregate::breakdown(&sessions, By::Day);
    assert_eq!(days.len(), 2);
    let (d1, t1) = &days[0];
    assert_eq!(d1, "2025-10-01");
    // Oct 1: a's requests 1 and 2 and b's request: 3 requests, 2 sessions.
    assert_eq!((t1.sessions, t1.predicted.requests), (2, 3));
    // Predicted units: (10 + 9990 × 1.25) + (10 + 1990 × 1.25 + 10000 × 0.1) + 5000
    //   = 12497.5 + 3497.5 + 5000 = 20995 units × $3 / Mtok = $0.062985; output 300 × $15 /
    //   Mtok = $0.0045; total $0.067485.
    assert!((t1.predicted.units - 20_995.0).abs() < 1e-9);
    assert!((t1.predicted_usd() - 0.067_485).abs() < 1e-12);
    // Billed: request 2 wrote 2990 and read 9000: 10 + 3737.5 + 900 = 4647.5 instead of
    // 3497.5: 20995 + 1150 = 22145 units.
    assert!((t1.billed.units - 22_145.0).abs() < 1e-9);
    // Hit rate on Oct 1: 10000 read of 27000 prompt.
    assert!((t1.predicted.hit_rate() - 10_000.0 / 27_000.0).abs() < 1e-12);
    let (d2, t2) = &days[1];
    assert_eq!(d2, "2025-10-02");
    assert_eq!((t2.predicted_breaks, t2.billed_breaks), (1, 1));
    assert_eq!(t2.causes.get("messages: ttl expired"), Some(&1));

    let projects = aggregate::breakdown(&sessions, By::Project);
    let names: Vec<&str> = projects.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["cli", "web"]);
    assert_eq!(projects[1].1.predicted.requests, 3);
    assert_eq!(projects[0].1.predicted.prompt, 5_000);

    // The break lost the previous prompt (12000) minus what it read (0): 12000 tokens, at
    // (1.25 − 0.1) × $3 / Mtok = $0.0414.
    let top = aggregate::top_breaks(&sessions, &PriceTable::bundled(), 5);
    assert_eq!(top.len(), 1);
    assert_eq!((top[0].lost_tokens, top[0].request), (12_000, 3));
    assert!((top[0].extra_usd - 0.0414).abs() < 1e-12);
    assert_eq!(top[0].cause, "messages: ttl expired");
}

#[test]
fn keepalive_pings_on_every_wait_up_to_the_limit() {
    let text = r#"
name = "idle"
model = "claude-sonnet-4-5"
system = { tokens = 2000 }
[[tools]]
name = "Read"
tokens = 300
[[steps]]
user = { tokens = 100 }
[[steps]]
assistant = { tokens = 50 }
[[steps]]
wait = "12m"
[[steps]]
user = { tokens = 100 }
[[steps]]
assistant = { tokens = 50 }
[[steps]]
wait = "3h"
[[steps]]
user = { tokens = 100 }
[[steps]]
assistant = { tokens = 50 }
"#;
    let sc = plancache::scenario::load_str(text, Path::new("idle.toml")).expect("loads");
    let ka = replay::Keepalive {
        every: Duration::from_secs(270),
        limit: Duration::from_secs(3600),
    };
    let out = replay::with_keepalive(&sc, ka);
    // 12 m: pings every 4m30s; 3 h: the first hour with pings, the next two without.
    let waits: Vec<(Duration, Option<Duration>)> = out
        .steps
        .iter()
        .filter_map(|s| match s {
            plancache::scenario::Step::Wait(w) => Some((w.0, w.1)),
            _ => None,
        })
        .collect();
    let every = Some(Duration::from_secs(270));
    assert_eq!(
        waits,
        [
            (Duration::from_secs(720), every),
            (Duration::from_secs(3600), every),
            (Duration::from_secs(7200), None)
        ]
    );
}

fn plancache() -> Command {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
}

#[test]
fn the_command_writes_the_report_and_names_a_missing_folder() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sessions = folder(
        tmp.path(),
        &["plan_mode.jsonl", "breaks.jsonl"],
        4,
        Duration::from_secs(3600),
    );
    assert_eq!(sessions.len(), 4);
    let out = tmp.path().join("report");
    let o = plancache()
        .args(["account"])
        .arg(tmp.path().join("projects"))
        .args([
            "--strategies",
            "permission-mode",
            "--ttl",
            "5m",
            "--keepalive",
            "off,4m30s",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Standard output is the daily table, the breaks by cause and the what-if (no Markdown);
    // the Markdown report is account.md.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("What if (predicted)"), "{stdout}");
    assert!(stdout.contains("permission-mode / ttl 5m / keepalive 4m 30s"));
    assert!(
        !stdout.contains("## ") && !stdout.contains(".svg"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("account.md")).unwrap();
    assert!(md.contains("## What if"));
    // account.md's code spans (`permission-mode`) are <code> in account.html, never backticks.
    assert!(md.contains("`permission-mode`"));
    let html = std::fs::read_to_string(out.join("account.html")).unwrap();
    assert!(html.contains("<code>permission-mode</code>") && !html.contains('`'));
    assert!(md.contains("Cheapest: ") || md.contains("No what-if setting is cheaper"));
    for f in [
        "account.md",
        "account.html",
        "account.csv",
        "cost-by-day.svg",
        "cost-by-day.png",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let csv = std::fs::read_to_string(out.join("account.csv")).unwrap();
    // 4 sessions an hour apart on 2025-10-01 over projects proj-0..proj-3, one model.
    assert_eq!(csv.lines().count(), 1 + 4);
    // Sessions an hour apart: plan_mode (sonnet-4-5, 1 h TTL) at 10:00 and 12:00, breaks
    // (sonnet-4, 5 m) at 11:00 and 13:00. The 12:00 copy finds the 10:00 copy's block expired
    // (last request 10:10:09 + 1 h = 11:10:09), the 13:00 copy the 11:00 one's (11:10:55 + 5 m);
    // different models never share: every session starts cold (empty `warm_from`).
    let sessions_csv = std::fs::read_to_string(out.join("sessions.csv")).unwrap();
    assert_eq!(sessions_csv.lines().count(), 1 + 4);
    for line in sessions_csv.lines().skip(1) {
        assert_eq!(line.split(',').nth(6), Some(""), "{line}");
    }

    let o = plancache()
        .args(["account"])
        .arg(tmp.path().join("nowhere"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nowhere"));
    let o = plancache()
        .args(["account"])
        .arg(tmp.path().join("projects"))
        .args(["--ttl", "2h"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--what-if-ttl 5m,1h"));
}

#[test]
fn keepalive_pings_hold_the_cache_through_an_idle_gap_at_the_price_of_the_reads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // breaks.jsonl (claude-sonnet-4, 5 m writes only): request 4 at 10:00:30 (prompt 4100 +
    // 26000 + 3 = 30103), then the user is away until 10:10:30 and request 5 finds the cache
    // expired (a TTL break, besides the fixture's context-edit, tool and compaction breaks).
    let sessions = folder(tmp.path(), &["breaks.jsonl"], 1, Duration::ZERO);
    let ka = account::whatif::parse_keepalive("4m30s", Duration::from_secs(3600)).unwrap();
    let five = |keepalive| replay::Setting {
        strategy: "permission-mode".into(),
        ttl: Some(plancache::prompt::Ttl::FiveMinutes),
        keepalive,
    };
    let opts = AccountOptions {
        whatif: vec![five(None), five(ka)],
        ..AccountOptions::default()
    };
    let a = account::run(&sessions, &opts, &env(), &indicatif::ProgressBar::hidden()).unwrap();
    let [own, off, on] = &a.whatif[..] else {
        panic!("three rows")
    };
    // The transcript wrote 5 m entries only: "5m" is the harness's own setting.
    assert_eq!(off.predicted, own.predicted);
    assert_eq!((off.breaks, off.pings), (own.breaks, 0));
    // The 10 min gap after request 4: pings at 4:30 and 9:00; the cache sees 1 min of idleness.
    assert_eq!(on.pings, 2);
    assert_eq!(on.breaks, own.breaks - 1);
    // Each ping reads request 4's prompt: 2 × 30103 tokens × 0.1 = 6020.6 units at $3 / Mtok,
    // plus one output token each at $15 / Mtok.
    assert_eq!(on.ping_cost.read, 2 * 30_103);
    assert!((on.ping_cost.units - 6_020.6).abs() < 1e-9);
    assert!((on.ping_cost.usd - 6_020.6 * 3.0 / 1e6).abs() < 1e-12);
    assert!((on.ping_output_usd - 2.0 * 15.0 / 1e6).abs() < 1e-15);
    // Request 5 now reads what request 4 left instead of writing it again.
    assert!(on.predicted.read >= own.predicted.read + 30_000);
    assert!(on.predicted.writes() + 30_000 <= own.predicted.writes());
}

/// Every request's cache counters zeroed, the whole prompt moved into `input_tokens`, and the TTL
/// split zeroed: what the account predicts may not move, since billed reads and writes are the
/// answer the replay is scored on, never its input.
fn blind_copy(dir: &Path) {
    for entry in walk(dir) {
        let text = std::fs::read_to_string(&entry).expect("reads");
        let mut out = String::new();
        for line in text.lines() {
            let Ok(mut v) = serde_json::from_str::<serde_json::Value>(line) else {
                out.push_str(line);
                out.push('\n');
                continue;
            };
            if let Some(u) = v.pointer_mut("/message/usage") {
                let get =
                    |u: &serde_json::Value, k: &str| u.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
                let total = get(u, "input_tokens")
                    + get(u, "cache_creation_input_tokens")
                    + get(u, "cache_read_input_tokens");
                u["input_tokens"] = total.into();
                u["cache_creation_input_tokens"] = 0.into();
                u["cache_read_input_tokens"] = 0.into();
                if let Some(split) = u.get_mut("cache_creation") {
                    for k in ["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"] {
                        if split.get(k).is_some() {
                            split[k] = 0.into();
                        }
                    }
                }
            }
            out.push_str(&v.to_string());
            out.push('\n');
        }
        std::fs::write(&entry, out).expect("writes");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).expect("lists") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            files.push(p);
        }
    }
    files
}

/// One request's prediction: prompt, read, break verdict, the model's reason.
type PredictedRow = (u64, u64, bool, String);

#[test]
fn account_predictions_never_read_the_billed_cache_counters() {
    let claude = [
        "plan_mode.jsonl",
        "breaks.jsonl",
        "sidechains.jsonl",
        "dkimuson_1af7fc5e.jsonl",
    ];
    let seen = tempfile::tempdir().expect("tempdir");
    let blind = tempfile::tempdir().expect("tempdir");
    // 16 sessions 20 minutes apart: some start while an earlier one's leading block lives.
    let a = run(
        &folder(seen.path(), &claude, 16, Duration::from_secs(1200)),
        Sharing::Timeline,
    );
    let sessions = folder(blind.path(), &claude, 16, Duration::from_secs(1200));
    blind_copy(blind.path());
    let b = run(&sessions, Sharing::Timeline);
    assert!(a.failures.is_empty() && b.failures.is_empty());
    let predicted = |acc: &Account| -> Vec<(Option<String>, Vec<PredictedRow>)> {
        acc.sessions
            .iter()
            .map(|s| {
                let warm = s
                    .warm_from
                    .as_ref()
                    .map(|w| w.rsplit('/').next().unwrap_or(w).to_string());
                let rows = s
                    .requests
                    .iter()
                    .map(|r| {
                        (
                            r.predicted.prompt,
                            r.predicted.read,
                            r.predicted_break,
                            r.reason.clone(),
                        )
                    })
                    .collect();
                (warm, rows)
            })
            .collect()
    };
    assert_eq!(predicted(&a), predicted(&b));
    // The billed side did move (the edit has teeth), while every what-if prediction did not.
    let billed = |acc: &Account| aggregate::overall(&acc.sessions).billed.read;
    assert!(billed(&a) > 0);
    assert_eq!(billed(&b), 0);
    let whatif = |acc: &Account| -> Vec<(String, u64, u64, usize)> {
        acc.whatif
            .iter()
            .map(|w| {
                (
                    w.setting.label(),
                    w.predicted.read,
                    w.predicted.write_5m + w.predicted.write_1h,
                    w.breaks,
                )
            })
            .collect()
    };
    assert_eq!(whatif(&a), whatif(&b));
}

/// Settings whose recordings are equal are replayed once and their figures reused (the what-if
/// grid renders each strategy and keep-alive once, and replays a recording equal to an earlier
/// one only once per TTL and leading block): every row of a grid run must equal the same
/// setting run alone, where nothing is shared but the harness row.
#[test]
fn what_if_rows_equal_each_setting_run_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sessions = folder(
        tmp.path(),
        &["plan_mode.jsonl", "sidechains.jsonl", "codex_rollout.jsonl"],
        3,
        Duration::from_secs(240),
    );
    let ka = account::whatif::parse_keepalive("4m30s", Duration::from_secs(3600)).unwrap();
    let mut grid = Vec::new();
    for strategy in ["masked", "permission-mode", "toolset-swap"] {
        for ttl in [
            plancache::prompt::Ttl::FiveMinutes,
            plancache::prompt::Ttl::OneHour,
        ] {
            for keepalive in [None, ka] {
                grid.push(replay::Setting {
                    strategy: strategy.into(),
                    ttl: Some(ttl),
                    keepalive,
                });
            }
        }
    }
    let run = |whatif: Vec<replay::Setting>| {
        let opts = AccountOptions {
            whatif,
            ..AccountOptions::default()
        };
        account::run(&sessions, &opts, &env(), &indicatif::ProgressBar::hidden()).unwrap()
    };
    let all = run(grid.clone());
    assert!(all.failures.is_empty() && all.whatif_excluded.is_empty());
    assert_eq!(all.whatif.len(), 13);
    for (k, setting) in grid.into_iter().enumerate() {
        let alone = run(vec![setting]);
        assert_eq!(
            alone.whatif[1],
            all.whatif[k + 1],
            "{}",
            all.whatif[k + 1].setting.label()
        );
    }
    // The grid is not trivial: masked renders these sessions as permission-mode does (the rows
    // are equal), toolset-swap does not.
    assert_eq!(all.whatif[1].predicted, all.whatif[5].predicted);
    assert_ne!(all.whatif[1].predicted, all.whatif[9].predicted);
}
