//! Each strategy's effect on the prompt, with figures derived by hand; cross-strategy trace
//! equivalence on every bundled scenario; the unrendered-call rule of `masked` / `toolset-swap`;
//! the "plan-mode transitions keep the cache" property of `permission-mode` under the Anthropic
//! model.
//!
//! The unit scenario below (all sizes in tokens):
//!   tools: Read 300, Edit 200 (write), EnterPlanMode 400, ExitPlanMode 100 = 1,000
//!   system 1,000; context CLAUDE.md 200; reminders: plan_enter 100, plan_exit 10, denied 40,
//!   approval header 30; deferred stub 10.
//!   steps: user 50 · mode plan · r1 reply 20 [Read -> 500, Edit (denied)] ·
//!          r2 reply 30 [ExitPlanMode, plan 70] · approve exit · r3 reply 15
//! The `ideal` cache reuses the longest prefix shared with an earlier prompt or visible reply of
//! the same model.

use std::path::Path;
use std::sync::Arc;

use plancache::cache::{self, IdealCache, PriceTable};
use plancache::engine::{self, replay, Replay, ReplayEnv};
use plancache::plan_mode::Mode;
use plancache::prompt::Tokenizer;
use plancache::scenario::{load_str, Session, Step};
use plancache::strategy::{self, Strategy};

const UNIT: &str = r#"
name = "unit"
model = "claude-sonnet-4-5"
plan_model = "claude-opus-4-5"
seed = 1
system = { tokens = 1000 }
context = [{ name = "CLAUDE.md", tokens = 200 }]
deferred_tools = { stub_tokens = 10 }

[reminders]
plan_enter = { tokens = 100 }
plan_exit = { tokens = 10 }
denied = { tokens = 40 }
plan_approved_header = 30

[[tools]]
name = "Read"
tokens = 300
[[tools]]
name = "Edit"
tokens = 200
[[tools]]
name = "EnterPlanMode"
tokens = 400
[[tools]]
name = "ExitPlanMode"
tokens = 100

[[steps]]
user = { tokens = 50 }
[[steps]]
mode = "plan"
[[steps]]
assistant = { tokens = 20, calls = [{ tool = "Read", result_tokens = 500 }, { tool = "Edit" }] }
[[steps]]
assistant = { tokens = 30, calls = [{ tool = "ExitPlanMode", plan_tokens = 70 }] }
[[steps]]
approve = "exit"
[[steps]]
assistant = { tokens = 15 }
"#;

fn session(text: &str) -> Session {
    let path = Path::new("unit.toml");
    let sc = load_str(text, path).expect("unit scenario loads");
    let tok = Arc::new(Tokenizer::new(sc.tokenizer));
    Session::new(sc, path, text, tok).expect("segments build")
}

fn by_name(name: &str) -> Box<dyn Strategy> {
    strategy::parse_list(name)
        .expect("known strategy")
        .remove(0)
}

fn ideal(text: &str, name: &str) -> Replay {
    let s = session(text);
    replay(
        &s,
        by_name(name).as_ref(),
        &mut IdealCache::default(),
        &ReplayEnv::default(),
    )
    .expect("replays")
}

fn prompts(r: &Replay) -> Vec<u64> {
    r.rows.iter().map(|row| row.prompt_tokens).collect()
}

fn cached(r: &Replay) -> Vec<u64> {
    r.rows.iter().map(|row| row.cached_tokens).collect()
}

#[test]
fn permission_mode_keeps_tools_and_system() {
    // r1 = tools 1,000 + system 1,000 + context 200 + user 50 + enter reminder 100 = 2,350.
    // r2 = r1 + reply 20 + Read 500 + denied 40 = 2,910; cached r1 + its reply = 2,370.
    // r3 = r2 + reply 30 + approval (30 + 70) + exit reminder 10 = 3,050; cached 2,910 + 30.
    let r = ideal(UNIT, "permission-mode");
    assert_eq!(prompts(&r), vec![2350, 2910, 3050]);
    assert_eq!(cached(&r), vec![0, 2370, 2940]);
    assert!(r.unrendered_calls.is_empty());
}

#[test]
fn toolset_swap_drops_write_tools_in_plan_mode() {
    // Plan-mode tools: Read, EnterPlanMode, ExitPlanMode = 800; the denied Edit is not rendered.
    // r1 = 800 + 1,000 + 350 = 2,150; r2 = 2,150 + 20 + 500 = 2,670 (cached 2,170).
    // r3 (default mode, full tools again) = 1,000 + 1,000 + conversation (350 + 20 + 500 + 30 +
    // 100 + 10 = 1,010) = 3,010; only the leading Read definition (300) matches anything cached.
    let r = ideal(UNIT, "toolset-swap");
    assert_eq!(prompts(&r), vec![2150, 2670, 3010]);
    assert_eq!(cached(&r), vec![0, 2170, 300]);
    assert_eq!(r.unrendered_calls.len(), 1);
}

#[test]
fn system_swap_rewrites_the_system_prompt_on_each_toggle() {
    // No reminder messages: the mode lives in the system prompt (derived plan prompt, 1,000).
    // r1 = 1,000 + 1,000 + 200 + 50 = 2,250; r2 = 2,250 + 20 + 500 + 40 = 2,810 (cached 2,270).
    // r3 (act system again) = 2,000 + 250 + 20 + 500 + 40 + 30 + 100 = 2,940; the tools (1,000)
    // are the only cached prefix: the act system prompt was never sent before.
    let r = ideal(UNIT, "system-swap");
    assert_eq!(prompts(&r), vec![2250, 2810, 2940]);
    assert_eq!(cached(&r), vec![0, 2270, 1000]);
    // With the tools option the toolset also loses Edit in plan mode (800 tools), so the first
    // request is 2,050 and the act-mode request shares only Read (300).
    let r = ideal(UNIT, "system-swap-tools");
    assert_eq!(prompts(&r), vec![2050, 2570, 2900]);
    assert_eq!(cached(&r), vec![0, 2070, 300]);
}

#[test]
fn history_reset_starts_a_new_conversation_with_the_plan() {
    // Same as permission-mode until approval; then the conversation is context 200 + the plan
    // message (30 + 70) + exit reminder 10: r3 = 2,000 + 310 = 2,310, and the cached prefix is
    // tools + system + context = 2,200.
    let r = ideal(UNIT, "history-reset");
    assert_eq!(prompts(&r), vec![2350, 2910, 2310]);
    assert_eq!(cached(&r), vec![0, 2370, 2200]);
}

#[test]
fn model_switch_uses_the_plan_model_and_a_separate_cache() {
    // Prompts as permission-mode; r1, r2 on Opus; r3 on Sonnet finds no Sonnet entry: 0 cached.
    let r = ideal(UNIT, "model-switch");
    assert_eq!(prompts(&r), vec![2350, 2910, 3050]);
    assert_eq!(cached(&r), vec![0, 2370, 0]);
    let models: Vec<&str> = r.rows.iter().map(|row| row.model.as_str()).collect();
    assert_eq!(
        models,
        vec!["claude-opus-4-5", "claude-opus-4-5", "claude-sonnet-4-5"]
    );
    assert_eq!(
        r.rows[2].break_text(),
        "tools: model changed at tool:Read (token 0)"
    );
}

#[test]
fn deferred_tools_lists_stubs_and_loads_on_demand() {
    // Tools: Read 300 + Edit 200 + two 10-token stubs = 520. r1 = 520 + 1,000 + 350 = 1,870.
    // r2's reply calls ExitPlanMode, so its reference (100, the full definition) is appended
    // first: r2 = 1,870 + 20 + 500 + 40 + 100 = 2,530 (cached 1,890).
    // r3 = 2,530 + 30 + 100 + 10 = 2,670 (cached 2,560): the tools prefix never changed.
    let r = ideal(UNIT, "deferred-tools");
    assert_eq!(prompts(&r), vec![1870, 2530, 2670]);
    assert_eq!(cached(&r), vec![0, 1890, 2560]);
}

#[test]
fn masked_has_no_denied_round_trip() {
    // Prompt of permission-mode without the 40-token denied result: 2,350 / 2,870 / 3,010.
    let r = ideal(UNIT, "masked");
    assert_eq!(prompts(&r), vec![2350, 2870, 3010]);
    assert_eq!(cached(&r), vec![0, 2370, 2900]);
    // The rule is shown, and the decision is still recorded in the trace.
    assert_eq!(r.unrendered_calls.len(), 1);
    assert!(
        r.unrendered_calls[0].contains("call 2 Edit cannot be made under masked (write tools are masked at decoding in plan mode)"),
        "{}",
        r.unrendered_calls[0]
    );
    assert!(r
        .trace
        .entries
        .iter()
        .any(|e| e.event == "call Edit" && e.decision == "deny (plan mode)"));
}

#[test]
fn system_message_keeps_the_system_prompt_and_appends_edits() {
    // No system edit in UNIT: the plan-mode reminders go in as system messages of the same
    // size, so the figures are permission-mode's (2,350 / 2,910 / 3,050; cached 0 / 2,370 /
    // 2,940).
    let r = ideal(UNIT, "system-message");
    assert_eq!(prompts(&r), vec![2350, 2910, 3050]);
    assert_eq!(cached(&r), vec![0, 2370, 2940]);
    // tools Read 300, system 1,000, user 50. r1 = 1,350.
    // A 12-token patch at token 500 of the system block, then r2 (reply 10 before it):
    //   permission-mode re-sends the patched block: r2 = 1,350 + 10 = 1,360, cached up to the
    //   patch = 300 + 500 = 800.
    //   system-message leaves the block and appends a 12-token system message:
    //   r2 = 1,360 + 12 = 1,372, cached r1 + its reply = 1,360.
    // A replacement of the block by 900 tokens, then r3 (reply 10 before it):
    //   permission-mode: r3 = 300 + 900 + 50 + 10 + 10 = 1,270; only the tools (300) match.
    //   system-message: a 900-token system message: r3 = 1,372 + 10 + 900 = 2,282, cached
    //   1,382 (r2 + its reply).
    let text = r#"
name = "sysmsg"
model = "claude-sonnet-4-5"
system = { tokens = 1000 }
[[tools]]
name = "Read"
tokens = 300
[[steps]]
user = { tokens = 50 }
[[steps]]
assistant = { tokens = 10 }
[[steps]]
edit_system = { block = 1, patch_at = 500, patch_tokens = 12 }
[[steps]]
assistant = { tokens = 10 }
[[steps]]
edit_system = { block = 1, tokens = 900 }
[[steps]]
assistant = { tokens = 10 }
"#;
    let r = ideal(text, "permission-mode");
    assert_eq!(prompts(&r), vec![1350, 1360, 1270]);
    assert_eq!(cached(&r), vec![0, 800, 300]);
    let m = ideal(text, "system-message");
    assert_eq!(prompts(&m), vec![1350, 1372, 2282]);
    assert_eq!(cached(&m), vec![0, 1360, 1382]);
    assert_eq!(m.trace, r.trace);
}

#[test]
fn frozen_tools_keeps_the_first_tools_array() {
    // tools Read 300 + Bash 200 = 500, system 1,000, user 50: r1 = 1,550.
    // add_tool X (100), r2 (reply 10 before it) calls X (result 20); remove_tool Bash; r3.
    //   permission-mode: r2 lists Read, Bash, X = 600: r2 = 600 + 1,000 + 50 + 10 = 1,660,
    //   cached the old tools list (500). r3 lists Read, X = 400: r3 = 400 + 1,000 + 50 + 10 +
    //   10 + 20 = 1,490, cached Read (300) only.
    //   frozen-tools: the array stays Read, Bash; X comes as a 100-token tool_addition block:
    //   r2 = 1,550 + 10 + 100 = 1,660, cached 1,560; r3 = 1,660 + 10 + 20 = 1,690 (Bash still
    //   listed), cached 1,670. A replace_tool of Read (250) adds a 250-token block: r4 = 1,690
    //   + 10 + 250 = 1,950, cached 1,700; permission-mode re-renders Read at the head: r4 =
    //   250 + 100 + 1,000 + 90 + 10 = 1,450, nothing cached.
    let text = r#"
name = "frozen"
model = "claude-sonnet-4-5"
system = { tokens = 1000 }
[[tools]]
name = "Read"
tokens = 300
[[tools]]
name = "Bash"
tokens = 200
[[steps]]
user = { tokens = 50 }
[[steps]]
assistant = { tokens = 10 }
[[steps]]
add_tool = { name = "X", tokens = 100 }
[[steps]]
assistant = { tokens = 10, calls = [{ tool = "X", result_tokens = 20 }] }
[[steps]]
remove_tool = "Bash"
[[steps]]
assistant = { tokens = 10 }
[[steps]]
replace_tool = { name = "Read", tokens = 250 }
[[steps]]
assistant = { tokens = 10 }
"#;
    let r = ideal(text, "permission-mode");
    assert_eq!(prompts(&r), vec![1550, 1660, 1490, 1450]);
    assert_eq!(cached(&r), vec![0, 500, 300, 0]);
    let f = ideal(text, "frozen-tools");
    assert_eq!(prompts(&f), vec![1550, 1660, 1690, 1950]);
    assert_eq!(cached(&f), vec![0, 1560, 1670, 1700]);
    assert_eq!(f.trace, r.trace);
    assert_eq!(
        f.rows[1].break_text(),
        "",
        "the tool_addition block is appended after the cached prefix"
    );
}

#[test]
fn check_prints_the_unrendered_call_rule() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("unit.toml");
    std::fs::write(&file, UNIT).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cannot be made under toolset-swap (the tool is not offered in plan mode)"),
        "{text}"
    );
    assert!(
        text.contains(
            "cannot be made under masked (write tools are masked at decoding in plan mode)"
        ),
        "{text}"
    );
    assert!(text.contains("plan file: plans/"), "{text}");
}

fn bundled() -> Vec<Session> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 8, "bundled scenarios: {paths:?}");
    paths
        .iter()
        .map(|p| Session::load(p, None).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[test]
fn every_strategy_makes_the_same_decisions_on_every_bundled_scenario() {
    let sessions = bundled();
    let strategies = strategy::all();
    assert_eq!(
        strategy::names(),
        vec![
            "toolset-swap",
            "permission-mode",
            "system-swap",
            "history-reset",
            "model-switch",
            "deferred-tools",
            "masked",
            "system-message",
            "frozen-tools",
            "system-swap-tools"
        ]
    );
    let report = engine::run(
        &sessions,
        &strategies,
        &["ideal".to_string()],
        &ReplayEnv::default(),
    )
    .expect("bundled scenarios replay");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    for chunk in report.replays.chunks(strategies.len()) {
        let first = &chunk[0].trace;
        assert!(!first.entries.is_empty());
        for r in chunk {
            assert_eq!(&r.trace, first, "{} / {}", r.scenario, r.strategy);
        }
    }
}

/// Under permission-mode and the Anthropic model (Claude Code layout), each request right after a
/// plan-mode transition (entering, reminder, ExitPlanMode answer, rejection) reads at least 99%
/// of the previous request's prompt, unless the idle gap exceeded the TTL written (CACHE_SEMANTICS
/// §8: what recorded Claude Code sessions show). Checked with `ideal` too.
#[test]
fn plan_transitions_keep_the_cache_under_permission_mode() {
    let prices = PriceTable::bundled();
    let mut plan_sessions = 0;
    for s in bundled() {
        for cache_name in ["anthropic", "ideal"] {
            let mut c = cache::build(cache_name, &prices).unwrap();
            let r = replay(
                &s,
                &strategy::PermissionMode,
                c.as_mut(),
                &ReplayEnv::default(),
            )
            .unwrap();
            // Steps whose decision changed the mode or answered a plan tool (an approval that
            // clears the context drops the prefix on purpose, under every strategy).
            let transition_steps: Vec<usize> = r
                .trace
                .entries
                .iter()
                .filter(|e| {
                    e.stream == "main"
                        && !e.decision.ends_with("context cleared")
                        && (e.mode_before != e.mode_after
                            || e.event.starts_with("reject")
                            || e.event.starts_with("lead"))
                })
                .map(|e| e.step)
                .collect();
            // Sessions that never touch plan mode (the examples of mid-session edits) have
            // nothing to check here.
            if transition_steps.is_empty() {
                continue;
            }
            plan_sessions += 1;
            let main: Vec<_> = r.rows.iter().filter(|row| row.stream == "main").collect();
            let mut checked = 0;
            for w in main.windows(2) {
                let (prev, next) = (w[0], w[1]);
                let after_transition = transition_steps
                    .iter()
                    .any(|t| prev.step < *t && *t <= next.step);
                // Only where no TTL can have expired: the Claude Code layout writes 1 h on the
                // main stream, and no bundled gap reaches it; `break_reason` names any expiry.
                if !after_transition || next.break_text().contains("ttl") {
                    continue;
                }
                checked += 1;
                assert!(
                    next.cached_tokens as f64 >= 0.99 * prev.prompt_tokens as f64,
                    "{} {cache_name}: request {} read {} of the previous {}",
                    s.scenario.name,
                    next.request,
                    next.cached_tokens,
                    prev.prompt_tokens
                );
            }
            let cleared = r
                .trace
                .entries
                .iter()
                .any(|e| e.decision.ends_with("context cleared"));
            assert!(
                checked > 0 || cleared,
                "{}: no transition checked",
                s.scenario.name
            );
        }
    }
    assert!(
        plan_sessions >= 2 * 8,
        "plan sessions checked: {plan_sessions}"
    );
}

#[test]
fn agents_run_as_their_own_streams_in_send_time_order() {
    // Main: tools Read 300 + Agent 200 = 500, system 1,000; plan mode via shift+tab.
    // Each agent: tools Read 300 + its system 400 + prompt 80 = 780 for its first request.
    let text = r#"
name = "agents"
model = "claude-sonnet-4-5"
system = { tokens = 1000 }
[reminders]
plan_enter = { tokens = 100 }
[[tools]]
name = "Read"
tokens = 300
[[tools]]
name = "Agent"
tokens = 200
[[steps]]
user = { tokens = 50 }
[[steps]]
mode = "plan"
[[steps]]
assistant = { tokens = 40 }
[[steps]]
[[steps.agents]]
name = "a"
system = { tokens = 400 }
tools = ["Read"]
prompt = { tokens = 80 }
[[steps.agents.steps]]
assistant = { tokens = 10, calls = [{ tool = "Read", result_tokens = 900, duration = "30s" }] }
[[steps.agents.steps]]
assistant = { tokens = 300 }
[[steps.agents]]
name = "b"
system = { tokens = 400 }
tools = ["Read"]
prompt = { tokens = 80 }
result_tokens = 120
[[steps.agents.steps]]
assistant = { tokens = 10, calls = [{ tool = "Read", result_tokens = 200 }] }
[[steps.agents.steps]]
assistant = { tokens = 250 }
[[steps]]
assistant = { tokens = 60 }
"#;
    let r = ideal(text, "permission-mode");
    let streams: Vec<&str> = r.rows.iter().map(|row| row.stream.as_str()).collect();
    // a and b start together (a first by launch order); b's tool takes 0.8 s, a's 30 s, so b's
    // second request is sent before a's.
    assert_eq!(streams, vec!["main", "a", "b", "b", "a", "main"]);
    assert!(r
        .rows
        .windows(2)
        .all(|w| w[0].sent_at_ms <= w[1].sent_at_ms));
    assert_eq!(prompts(&r)[1..3], [780, 780]);
    // b's second request: 780 + reply 10 + result 200 = 990; a's: 780 + 10 + 900 = 1,690.
    assert_eq!(r.rows[3].prompt_tokens, 990);
    assert_eq!(r.rows[4].prompt_tokens, 1690);
    // Main resumes with both results, in launch order: a's = its last reply (300), b's = 120.
    // main r2 = 500 + 1,000 + user 50 + reminder 100 + reply 40 + 300 + 120 = 2,110.
    assert_eq!(r.rows[5].prompt_tokens, 2110);
    assert!(r.rows[5].sent_at_ms >= r.rows[4].sent_at_ms);
    // Trace: the launches, then a's decisions, then b's (independent of timing).
    let events: Vec<String> = r
        .trace
        .entries
        .iter()
        .map(|e| format!("{}:{}", e.stream, e.event))
        .collect();
    assert_eq!(
        events,
        vec![
            "main:mode plan",
            "main:call Agent (a)",
            "main:call Agent (b)",
            "a:call Read",
            "b:call Read"
        ]
    );
    assert!(r.trace.entries.iter().all(|e| e.mode_after == Mode::Plan));
}

#[test]
fn context_events_break_where_the_transcripts_show() {
    // tools 500 (Read 300 + Bash 200), system 1,000, CLAUDE.md 200, user 50.
    // r1 = 1,750. edit_context -> r2 = 1,750 + reply 10 + 1,900 - 200 = 3,460, cached: tools +
    // system = 1,500. add_tool (X, 100) -> r3 = 3,460 + 10 + 100 = 3,570; cached: the old tools
    // list (500) only. compact -> r4 = 600 tools + 1,000 + CLAUDE.md (1,900) + summary 300 =
    // 3,800, cached 3,500 (everything up to the summary).
    let text = r#"
name = "ctx"
model = "claude-sonnet-4-5"
system = { tokens = 1000 }
context = [{ name = "CLAUDE.md", tokens = 200 }]
[[tools]]
name = "Read"
tokens = 300
[[tools]]
name = "Bash"
tokens = 200
[[steps]]
user = { tokens = 50 }
[[steps]]
assistant = { tokens = 10 }
[[steps]]
edit_context = { name = "CLAUDE.md", tokens = 1900 }
[[steps]]
assistant = { tokens = 10 }
[[steps]]
add_tool = { name = "X", tokens = 100 }
[[steps]]
assistant = { tokens = 10 }
[[steps]]
compact = { summary_tokens = 300, request = false }
[[steps]]
assistant = { tokens = 10 }
"#;
    // `request = false`: as in a transcript, the compaction's own request is not replayed.
    let r = ideal(text, "permission-mode");
    assert_eq!(prompts(&r), vec![1750, 3460, 3570, 3800]);
    assert_eq!(cached(&r), vec![0, 1500, 500, 3500]);
    // deferred-tools announces X (30 tokens) instead of listing it: r3 = 3,460 + 10 + 30 =
    // 3,500 and reads all of r2 and its reply (3,470); after compaction r4 = 500 + 1,000 +
    // 1,900 + 300 = 3,700, cached 3,400.
    let r = ideal(text, "deferred-tools");
    assert_eq!(prompts(&r), vec![1750, 3460, 3500, 3700]);
    assert_eq!(cached(&r), vec![0, 1500, 3470, 3400]);
}

#[test]
fn plan_files_are_decided_by_path() {
    // Seed 11 draws the slug `gentle-dawn` (see `plancache check`): the main stream may write
    // plans/gentle-dawn.md in plan mode, subagent `p` only plans/gentle-dawn-agent-p.md.
    let text = r#"
name = "paths"
model = "claude-sonnet-4-5"
seed = 11
system = { tokens = 100 }
[[tools]]
name = "Write"
tokens = 10
[[tools]]
name = "Agent"
tokens = 10
[[tools]]
name = "ExitPlanMode"
tokens = 10
[[steps]]
mode = "plan"
[[steps]]
assistant = { tokens = 5, calls = [
  { tool = "Write", path = "plans/other.md" },
  { tool = "Write", path = "plans/gentle-dawn.md", plan_tokens = 300 },
] }
[[steps]]
[[steps.agents]]
name = "p"
system = { tokens = 50 }
tools = ["Write"]
prompt = { tokens = 10 }
[[steps.agents.steps]]
assistant = { tokens = 5, calls = [
  { tool = "Write", path = "plans/gentle-dawn-agent-p.md" },
  { tool = "Write", path = "plans/gentle-dawn.md" },
] }
[[steps]]
assistant = { tokens = 5, calls = [{ tool = "ExitPlanMode" }] }
[[steps]]
approve = "exit"
"#;
    let r = ideal(text, "permission-mode");
    let decisions: Vec<String> = r
        .trace
        .entries
        .iter()
        .filter(|e| e.event.starts_with("call Write"))
        .map(|e| format!("{} {} -> {}", e.stream, e.event, e.decision))
        .collect();
    assert_eq!(
        decisions,
        vec![
            "main call Write plans/other.md -> deny (plan mode)",
            "main call Write plans/gentle-dawn.md -> allow (plan file)",
            "p call Write plans/gentle-dawn-agent-p.md -> allow (plan file)",
            "p call Write plans/gentle-dawn.md -> deny (plan mode)",
        ]
    );
    // The plan written by path is the one ExitPlanMode presents.
    assert!(r
        .trace
        .entries
        .iter()
        .any(|e| e.decision.starts_with("plan approved (300 tokens)")));
}

/// DESIGN §6: a strategy that keeps tools and system byte-identical never loses the tools/system
/// prefix while its cache entry is alive (Anthropic model, Claude Code layout with breakpoints on
/// the system prompt; bundled scenarios change no tools mid-session).
#[test]
fn constant_prefix_strategies_always_read_tools_and_system() {
    let prices = PriceTable::bundled();
    for s in bundled() {
        // Scenarios that edit the tools or the system prompt break this prefix on purpose.
        if s.scenario.steps.iter().any(|st| {
            matches!(
                st,
                Step::EditSystem(_)
                    | Step::AddTool(_)
                    | Step::RemoveTool(_)
                    | Step::ReplaceTool(_)
                    | Step::ReorderTools(_)
            )
        }) {
            continue;
        }
        for name in [
            "permission-mode",
            "masked",
            "history-reset",
            "deferred-tools",
        ] {
            let strategy = by_name(name);
            let prefix: u64 = strategy
                .tools(&s, &s.tools, Mode::Default)
                .iter()
                .chain(strategy.system(&s, Mode::Default).iter())
                .map(|seg| seg.len() as u64)
                .sum();
            let mut c = cache::build("anthropic", &prices).unwrap();
            let r = replay(&s, strategy.as_ref(), c.as_mut(), &ReplayEnv::default()).unwrap();
            let main: Vec<_> = r.rows.iter().filter(|row| row.stream == "main").collect();
            for row in main.iter().skip(1) {
                if row.break_text().contains("ttl") {
                    continue;
                }
                assert!(
                    row.cached_tokens >= prefix,
                    "{} {name}: request {} read {} < tools+system {prefix}",
                    s.scenario.name,
                    row.request,
                    row.cached_tokens
                );
            }
        }
    }
}
