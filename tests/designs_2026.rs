//! The 2026 designs (issue 24): clear context after approval, per-stream TTL classes and
//! zero-token keep-alive pings, lookback and breakpoint-budget warnings, and the subagent
//! environment breakpoint. Every figure is derived by hand in the comment above its assertion.
//!
//! Prices (data/pricing.toml): Sonnet 4.5 input $3/M, 5 m write $3.75/M, 1 h write $6/M, read
//! $0.30/M, output $15/M, minimum 1,024; Haiku 4.5 input $1/M, writes 1.25x, read 0.1x,
//! minimum 4,096.

use std::path::Path;
use std::sync::Arc;

use plancache::cache::{self, anthropic, CacheConfig, CacheModel, CacheOutcome};
use plancache::engine::{self, replay, Replay, ReplayEnv};
use plancache::prompt::{Request, Tokenizer};
use plancache::scenario::{load_file, load_str, Session, Step, Target};
use plancache::strategy::{self, Strategy};
use plancache::sweep::{self, Shard, Sweep};

fn session(text: &str) -> Session {
    let path = Path::new("unit.toml");
    let sc = load_str(text, path).expect("unit scenario loads");
    let tok = Arc::new(Tokenizer::new(sc.tokenizer));
    Session::new(sc, path, text, tok).expect("segments build")
}

fn bundled(name: &str) -> Session {
    let path = Path::new("scenarios").join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).expect("bundled scenario");
    let sc = load_file(&path).expect("loads");
    let tok = Arc::new(Tokenizer::new(sc.tokenizer));
    Session::new(sc, &path, &text, tok).expect("segments build")
}

fn by_name(name: &str) -> Box<dyn Strategy> {
    strategy::parse_list(name).expect("known").remove(0)
}

fn run_with(s: &Session, strategy: &str, cache_name: &str, caches: &CacheConfig) -> Replay {
    let env = ReplayEnv {
        caches: caches.clone(),
        ..ReplayEnv::default()
    };
    let mut model = cache::build_with(cache_name, &env.prices, &env.caches).expect("cache");
    replay(s, by_name(strategy).as_ref(), model.as_mut(), &env).expect("replays")
}

fn run(s: &Session, strategy: &str, cache_name: &str) -> Replay {
    run_with(s, strategy, cache_name, &CacheConfig::default())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

// ---------------------------------------------------------------------------------------------
// Item 2: approve = { exit = true, clear_context = true }

/// The break-even session: tools ExitPlanMode 700 + Read 800 = 1,500; system 2,000 (tools +
/// system 3,500); CLAUDE.md 1,800; starts in plan mode; user 100; r1 reply 100 [Read -> 10,000];
/// r2 reply 100 [ExitPlanMode, plan 500]; approve (approval 30 + 500 = 530, exit reminder 41);
/// then `turns + 1` replies of 100 tokens (the generator's implementation turns plus closing
/// reply). Under `anthropic` every main-stream breakpoint writes 1 h entries ($6/M).
fn break_even_text(turns: u64, clear: bool) -> String {
    let mut t = format!(
        r#"
name = "tiny-clear"
model = "claude-sonnet-4-5"
initial_mode = "plan"
system = {{ tokens = 2000 }}
context = [{{ name = "CLAUDE.md", tokens = 1800 }}]
[[tools]]
name = "ExitPlanMode"
tokens = 700
[[tools]]
name = "Read"
tokens = 800
[[steps]]
user = {{ tokens = 100 }}
[[steps]]
assistant = {{ tokens = 100, calls = [{{ tool = "Read", result_tokens = 10000 }}] }}
[[steps]]
assistant = {{ tokens = 100, calls = [{{ tool = "ExitPlanMode", plan_tokens = 500 }}] }}
[[steps]]
approve = {{ exit = true, clear_context = {clear} }}
"#
    );
    for _ in 0..=turns {
        t.push_str("[[steps]]\nassistant = { tokens = 100 }\n");
    }
    t
}

#[test]
fn clear_context_first_request_is_tools_system_context_and_plan() {
    // Keep: r3 = tools+system 3,500 + CLAUDE.md 1,800 + user 100 + reply 100 + Read 10,000 +
    // reply 100 + approval 530 + reminder 41 = 16,171, reading r2's 15,500.
    // Clear: r3 = 3,500 + 1,800 + 530 + 41 = 5,871, reading only the system entry (3,500).
    let keep = run(
        &session(&break_even_text(0, false)),
        "permission-mode",
        "anthropic",
    );
    let clear = run(
        &session(&break_even_text(0, true)),
        "permission-mode",
        "anthropic",
    );
    let p = |r: &Replay| r.rows.iter().map(|x| x.prompt_tokens).collect::<Vec<_>>();
    let c = |r: &Replay| r.rows.iter().map(|x| x.cached_tokens).collect::<Vec<_>>();
    assert_eq!(p(&keep), vec![5400, 15500, 16171]);
    assert_eq!(c(&keep), vec![0, 5400, 15500]);
    assert_eq!(p(&clear), vec![5400, 15500, 5871]);
    assert_eq!(c(&clear), vec![0, 5400, 3500]);
    // r3 costs: keep 15,500 x 0.3 + 671 x 6 + 100 x 15 = $0.010176; clear 3,500 x 0.3 +
    // 2,371 x 6 + 1,500 = $0.016776 (per million).
    assert!(
        close(keep.rows[2].cost_usd, 0.010176),
        "{}",
        keep.rows[2].cost_usd
    );
    assert!(
        close(clear.rows[2].cost_usd, 0.016776),
        "{}",
        clear.rows[2].cost_usd
    );
    assert!(clear
        .trace
        .entries
        .iter()
        .any(|e| e.decision.ends_with("; context cleared")));
}

#[test]
fn clear_context_break_even_is_four_requests_after_approval() {
    // After approval, request j >= 2 costs: keep (16,071 + 100(j-1)) x 0.3 + 100 x 6 + 1,500;
    // clear (5,771 + 100(j-1)) x 0.3 + 100 x 6 + 1,500: clearing saves 10,300 x 0.3 = $0.00309
    // each. Request 1 costs $0.0066 more when cleared (above). Saving after n requests:
    // -0.0066 + 0.00309 (n - 1): n = 1: -0.0066, 2: -0.00351, 3: -0.00042, 4: +0.00267,
    // 5: +0.00576. Break-even: 4 requests after approval (implementation_turns = 3).
    let grid = r#"
name = "tiny-clear"
[grid]
implementation_turns = [0, 1, 2, 3, 4]
clear_context = [false, true]
strategy = ["permission-mode"]
cache = ["anthropic"]
"#;
    let spec = Sweep::parse(grid, Path::new("tiny.toml")).expect("sweep parses");
    let source = |p: &toml::Table| -> Result<Session, String> {
        let turns = p["implementation_turns"].as_integer().unwrap() as u64;
        let clear = p["clear_context"].as_bool().unwrap();
        Ok(session(&break_even_text(turns, clear)))
    };
    let rows = sweep::run(&spec, Shard::all(), &source, &ReplayEnv::default()).expect("runs");
    let b = sweep::clear_context_break_even(&spec.header(), &rows).expect("break-even");
    assert_eq!(b.len(), 1);
    assert_eq!((b[0].turns, b[0].requests()), (Some(3), Some(4)));
    let expected = [-0.0066, -0.00351, -0.00042, 0.00267, 0.00576];
    for ((t, d), e) in b[0].savings.iter().zip(expected) {
        // Session costs are summed from unrounded request costs; the CSV keeps 6 decimals.
        assert!((d - e).abs() < 2e-6, "turns {t}: {d} vs {e}");
    }
    assert!(
        b[0].line().contains("from 4 requests after approval"),
        "{}",
        b[0].line()
    );
}

#[test]
fn clear_context_under_permission_mode_is_history_reset() {
    // history-reset restarts from context + plan after every approval, so with the approval
    // cleared the two strategies send the same prompts: identical figures on clear-context.
    let s = bundled("clear-context");
    let pm = run(&s, "permission-mode", "anthropic").summary();
    let hr = run(&s, "history-reset", "anthropic").summary();
    assert_eq!(pm.cells()[3..], hr.cells()[3..]);
    // The first request after approval: tools 10,944 (the 30 tool sizes of the file) + system
    // 6,600 + CLAUDE.md 1,800 + approval (152 + 1,100) + exit reminder 41 = 20,637.
    let r = run(&s, "permission-mode", "anthropic");
    let approve = s
        .scenario
        .steps
        .iter()
        .position(|st| matches!(st, Step::Approve(a) if a.target == Target::Exit))
        .unwrap();
    let first = r.rows.iter().find(|x| x.step > approve).unwrap();
    assert_eq!(first.prompt_tokens, 20637);
    // Every strategy makes the same decisions (the state machine's trace).
    let report = engine::run(
        std::slice::from_ref(&s),
        &strategy::all(),
        &["anthropic".to_string()],
        &ReplayEnv::default(),
    )
    .unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

#[test]
fn approve_table_round_trips_and_bad_forms_are_refused() {
    let s = session(&break_even_text(0, true));
    let text = plancache::scenario::to_toml(&s.scenario).unwrap();
    assert!(text.contains("clear_context = true"), "{text}");
    let back = load_str(&text, Path::new("x.toml")).unwrap();
    assert!(back
        .steps
        .iter()
        .any(|st| matches!(st, Step::Approve(a) if a.clear_context)));
    let plain = session(&break_even_text(0, false));
    let text = plancache::scenario::to_toml(&plain.scenario).unwrap();
    assert!(text.contains("approve = \"exit\""), "{text}");
    for (bad, says) in [
        (
            "{ enter = true, clear_context = true }",
            "applies to approving ExitPlanMode",
        ),
        (
            "{ enter = true, exit = true }",
            "exactly one of `enter` or `exit`",
        ),
        ("{ exit = true, clear = true }", "unknown field"),
    ] {
        let t = break_even_text(0, false).replace("{ exit = true, clear_context = false }", bad);
        let e = load_str(&t, Path::new("bad.toml")).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Item 3: TTL per stream, keep-alive pings with max_tokens = 0

/// Main: tools Read 700 + Agent 800 = 1,500, system 2,000, user 100: r1 writes 3,600.
/// Subagent: tools Read 700, system 1,000, prompt 100: its request writes 1,800.
fn ttl_text(ttl: &str) -> String {
    format!(
        r#"
name = "tiny-ttl"
model = "claude-sonnet-4-5"
{ttl}
system = {{ tokens = 2000 }}
[[tools]]
name = "Read"
tokens = 700
[[tools]]
name = "Agent"
tokens = 800
access = "read"
[[steps]]
user = {{ tokens = 100 }}
[[steps]]
assistant = {{ tokens = 100 }}
[[steps]]
[[steps.agents]]
name = "sub"
system = {{ tokens = 1000 }}
tools = ["Read"]
prompt = {{ tokens = 100 }}
[[steps.agents.steps]]
assistant = {{ tokens = 100 }}
"#
    )
}

/// (main r1 5 m writes, main r1 1 h writes, subagent 5 m, subagent 1 h) under `cache_name`.
fn ttl_split(ttl: &str, cache_name: &str) -> (u64, u64, u64, u64) {
    let r = run(&session(&ttl_text(ttl)), "permission-mode", cache_name);
    let main = r.rows.iter().find(|x| x.stream == "main").unwrap();
    let sub = r.rows.iter().find(|x| x.stream == "sub").unwrap();
    (
        main.cache_creation_5m_tokens,
        main.cache_creation_1h_tokens,
        sub.cache_creation_5m_tokens,
        sub.cache_creation_1h_tokens,
    )
}

#[test]
fn ttl_per_stream_sets_each_stream_class() {
    // No setting: Claude Code's layout writes 1 h in main, 5 m in subagents.
    assert_eq!(ttl_split("", "anthropic"), (0, 3600, 1800, 0));
    // The scalar form sets every stream.
    assert_eq!(ttl_split("ttl = \"5m\"", "anthropic"), (3600, 0, 1800, 0));
    assert_eq!(ttl_split("ttl = \"1h\"", "anthropic"), (0, 3600, 0, 1800));
    // Per stream: main 5 m, subagents 1 h.
    assert_eq!(
        ttl_split("ttl = { main = \"5m\", subagents = \"1h\" }", "anthropic"),
        (3600, 0, 0, 1800)
    );
    // A half left out follows the layout (subagents: 5 m).
    assert_eq!(
        ttl_split("ttl = { main = \"5m\" }", "anthropic"),
        (3600, 0, 1800, 0)
    );
    // The automatic layout (5 m by default) takes the scenario's class too.
    assert_eq!(
        ttl_split("ttl = { main = \"1h\" }", "anthropic-auto"),
        (0, 3600, 1800, 0)
    );
    // Main r1 cost: 3,600 x $6/M + 100 x $15/M = $0.0231 at 1 h; 3,600 x 3.75 + 1,500 = $0.015
    // at 5 m.
    let r = run(
        &session(&ttl_text("ttl = \"5m\"")),
        "permission-mode",
        "anthropic",
    );
    assert!(close(r.rows[0].cost_usd, 0.015), "{}", r.rows[0].cost_usd);
    let e = load_str(&ttl_text("ttl = \"2h\""), Path::new("t.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ttl = { main = \"1h\", subagents = \"5m\" }"),
        "{e}"
    );
}

#[test]
fn zero_token_keepalive_pings_are_billed_reads_only() {
    // ttl-keepalive: the ExitPlanMode request's prompt is tools 5,484 + system 6,600 + plan
    // reminder 595 + user 120 + reply 60 + agent result 600 + reply 90 + results 600 + 2,400
    // = 16,549; the ping 4m30s later re-sends it: 16,549 read x $0.30/M = $0.0049647, no output.
    let s = bundled("ttl-keepalive");
    let r = run(&s, "permission-mode", "anthropic");
    let pings: Vec<_> = r
        .rows
        .iter()
        .filter(|x| x.kind.as_str() == "keepalive")
        .collect();
    assert_eq!(pings.len(), 1);
    assert_eq!(
        (pings[0].prompt_tokens, pings[0].cached_tokens),
        (16549, 16549)
    );
    assert_eq!(pings[0].output_tokens, 0);
    assert!(close(pings[0].cost_usd, 0.0049647), "{}", pings[0].cost_usd);
    // With max_tokens = 1 the same ping bills one output token more: + $0.000015.
    let text = std::fs::read_to_string("scenarios/ttl-keepalive.toml")
        .unwrap()
        .replace("keepalive_max_tokens = 0\n", "");
    let one = run(&session(&text), "permission-mode", "anthropic");
    let ping = one
        .rows
        .iter()
        .find(|x| x.kind.as_str() == "keepalive")
        .unwrap();
    assert_eq!(ping.output_tokens, 1);
    assert!(close(ping.cost_usd, 0.0049797), "{}", ping.cost_usd);
    // Every main-stream write is 5 m (`main = "5m"`): r1 writes 12,799 at $3.75/M.
    assert_eq!(r.rows[0].cache_creation_1h_tokens, 0);
    assert_eq!(r.rows[0].cache_creation_5m_tokens, 12799);
    let bad = text.replace("seed = 21\n", "seed = 21\nkeepalive_max_tokens = 2\n");
    let e = load_str(&bad, Path::new("k.toml")).unwrap_err().to_string();
    assert!(
        e.contains("keepalive_max_tokens") && e.contains("at most 1"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Item 4: lookback and breakpoint budget

/// Records the requests of a replay.
struct Recorder(Box<dyn CacheModel>, Vec<Request>);

impl CacheModel for Recorder {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        self.1.push(req.clone());
        self.0.lookup(req)
    }
    fn store(&mut self, req: &Request, o: &CacheOutcome, v: u64, d: u64) {
        self.0.store(req, o, v, d)
    }
}

fn requests(s: &Session) -> Vec<Request> {
    let env = ReplayEnv::default();
    let mut rec = Recorder(cache::build("ideal", &env.prices).unwrap(), Vec::new());
    replay(s, by_name("permission-mode").as_ref(), &mut rec, &env).unwrap();
    rec.1
}

#[test]
fn twenty_four_parallel_calls_overrun_the_lookback() {
    // parallel-tool-calls: request 2's last block is step4:result2:Grep; request 3 appends the
    // reply and 24 results (25 blocks), so its last-block mark is 25 positions after that
    // entry; the 20-position window (the mark and the 19 before it) ends 5 blocks short. The
    // harness's marks (last tool, system, CLAUDE.md) plus the automatic one are 4: no 400.
    let s = bundled("parallel-tool-calls");
    let reqs = requests(&s);
    let cfg = CacheConfig::default();
    for config in [&cfg.anthropic, &cfg.anthropic_auto] {
        let w = anthropic::layout_warnings(config, &reqs);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].request, 2);
        assert!(w[0].message.contains("mark on step5:result24:Read is 25 blocks after the last cached entry (step4:result2:Grep)"), "{}", w[0].message);
        assert!(
            w[0].message.contains("e.g. on step5:result18:Read"),
            "{}",
            w[0].message
        );
    }
    // The model agrees: request 3 reads only up to the CLAUDE.md mark under anthropic-auto
    // (tools 10,944 + system 6,600 + CLAUDE.md 1,800 = 19,344) and stops on a lookback.
    let r = run(&s, "permission-mode", "anthropic-auto");
    assert_eq!(r.rows[2].cached_tokens, 19344);
    assert!(
        r.rows[2].break_text().contains("lookback exceeded"),
        "{}",
        r.rows[2].break_text()
    );
}

#[test]
fn a_fifth_mark_is_named() {
    // Marks on both tools and both system blocks, plus the automatic one on the last block:
    // five; the fifth (step1:user) is over Anthropic's 4.
    let text = r#"
name = "five-marks"
model = "claude-sonnet-4-5"
system = [{ tokens = 1000, cache_control = "1h" }, { tokens = 1000, cache_control = "1h" }]
[[tools]]
name = "Read"
tokens = 600
cache_control = "1h"
[[tools]]
name = "Grep"
tokens = 600
cache_control = "1h"
[[steps]]
user = { tokens = 100 }
[[steps]]
assistant = { tokens = 100 }
"#;
    let s = session(text);
    let reqs = requests(&s);
    let cfg = CacheConfig::default();
    let w = anthropic::layout_warnings(&cfg.anthropic_auto, &reqs);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].message.starts_with("5 cache_control marks"),
        "{}",
        w[0].message
    );
    assert!(
        w[0].message
            .contains("mark 5 on step1:user exceeds Anthropic's limit of 4"),
        "{}",
        w[0].message
    );
    // The Claude Code layout ignores the scenario's marks: nothing to warn about.
    assert!(anthropic::layout_warnings(&cfg.anthropic, &reqs).is_empty());
    // The model refuses the request, naming the same mark.
    let env = ReplayEnv::default();
    let mut m = cache::build("anthropic-auto", &env.prices).unwrap();
    let e = replay(&s, by_name("permission-mode").as_ref(), m.as_mut(), &env).unwrap_err();
    assert!(e.to_string().contains("(mark 5 is on step1:user)"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Item 1: the subagent environment breakpoint

#[test]
fn environment_breakpoint_lets_later_spawns_read_the_agent_prompt() {
    // subagent-environment: Explore tools Glob 180 + Grep 480 + Read 450 + WebFetch 480 = 1,590,
    // agent prompt 3,200 (4,790 >= Haiku's 4,096), environment 1,600 per spawn. The first three
    // spawns run in parallel (no reads between them); with the mark before the environment the
    // two later spawns read 4,790 tokens each instead of writing them (5 m, 1.25x): 9,580 more
    // cached, (1.25 - 0.1) x 9,580 x $1/M = $0.011017 saved.
    let s = bundled("subagent-environment");
    let off = run(&s, "permission-mode", "anthropic");
    let mut cfg = CacheConfig::default();
    cfg.anthropic.subagent_environment_breakpoint = true;
    let on = run_with(&s, "permission-mode", "anthropic", &cfg);
    let sum = |r: &Replay, f: fn(&plancache::metrics::RequestRow) -> u64| -> u64 {
        r.rows.iter().map(f).sum()
    };
    assert_eq!(
        sum(&on, |x| x.cached_tokens) - sum(&off, |x| x.cached_tokens),
        9580
    );
    let cost = |r: &Replay| r.rows.iter().map(|x| x.cost_usd).sum::<f64>();
    assert!(
        (cost(&off) - cost(&on) - 0.011017).abs() < 1e-9,
        "{}",
        cost(&off) - cost(&on)
    );
    // The later spawns' first requests: 4,790 read with the option, nothing without.
    let first = |r: &Replay, stream: &str| {
        r.rows
            .iter()
            .find(|x| x.stream == stream)
            .unwrap()
            .cached_tokens
    };
    assert_eq!(
        (first(&off, "check-api"), first(&on, "check-api")),
        (0, 4790)
    );
    // The parallel first batch cannot profit either way.
    assert_eq!(
        (first(&off, "explore-db"), first(&on, "explore-db")),
        (0, 0)
    );
    // A cache option changes no decision: the traces are the same.
    assert_eq!(off.trace.entries, on.trace.entries);
}

#[test]
fn check_prints_the_lookback_warning() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(["check", "scenarios/parallel-tool-calls.toml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("warning: anthropic, anthropic-auto (permission-mode): request 3")
            && text.contains("25 blocks after the last cached entry (step4:result2:Grep)"),
        "{text}"
    );
}
