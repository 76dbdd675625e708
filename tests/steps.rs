//! The mid-session steps `edit_system`, `reorder_tools`, `replace_tool`, `remove_tool`, the
//! summarisation request of `compact` and the keep-alive pings of `wait`, replayed from the
//! bundled example scenarios under the `anthropic` breakpoint cache and the `openai` automatic
//! cache, with every figure derived by hand in the comments.
//!
//! Shared sizes (every example): nine tools of 800 + 900 + 180 + 480 + 450 + 430 + 300 + 1,296 +
//! 648 = 5,484 tokens (T) and a system prompt of 2,900 + 3,700 = 6,600 tokens (S); T + S =
//! 12,084. Claude Code's layout puts breakpoints on system block 1 (ends at 5,484 + 2,900 =
//! 8,384), system block 2 (12,084) and the last message block.
//!
//! Prices per million tokens: claude-sonnet-4-5 $3 in / $15 out, 5m write 1.25x, 1h write 2x,
//! read 0.1x; gpt-4o $2.50 in / $10 out, read 0.5x, writes free (billed as plain input).
//! OpenAI hits are whole 128-token units.

use std::path::Path;
use std::time::Duration;

use plancache::cache::{self, CacheConfig};
use plancache::engine::{self, Replay, ReplayEnv};
use plancache::metrics::RequestRow;
use plancache::prompt::Ttl;
use plancache::scenario::{load_str, Session, Step, SystemEdit, WaitDuration};
use plancache::strategy::{self, PermissionMode};
use plancache::sweep::{Generated, Shard, Sweep};

fn load(name: &str) -> Session {
    Session::load(Path::new(&format!("scenarios/{name}.toml")), None).unwrap()
}

/// `anthropic` with every breakpoint at 5 minutes (Claude Code before 2.1; the sweep's
/// `ttl = "5m"`).
fn anthropic_5m() -> CacheConfig {
    let mut c = CacheConfig::default();
    c.anthropic.system_ttl = Ttl::FiveMinutes;
    c.anthropic.message_ttl = Ttl::FiveMinutes;
    c
}

/// `openai` forgetting entries after 5 idle minutes (the low end of the documented 5-10 min).
fn openai_5m() -> CacheConfig {
    let mut c = CacheConfig::default();
    c.openai.idle_ttl = Duration::from_secs(5 * 60);
    c
}

fn replay_with(session: &Session, cache_name: &str, caches: CacheConfig) -> Replay {
    let env = ReplayEnv {
        caches,
        ..ReplayEnv::default()
    };
    let mut cache = cache::build_with(cache_name, &env.prices, &env.caches).unwrap();
    engine::replay(session, &PermissionMode, cache.as_mut(), &env).unwrap()
}

fn replay(session: &Session, cache_name: &str) -> Replay {
    replay_with(session, cache_name, CacheConfig::default())
}

/// The scenario served by gpt-4o (so the `openai` cache is priced at OpenAI's prices).
fn on_gpt_4o(mut session: Session) -> Session {
    session.scenario.model = "gpt-4o".into();
    session
}

#[track_caller]
fn assert_row(row: &RequestRow, prompt: u64, cached: u64, written: u64, cost: f64) {
    assert_eq!(
        (row.prompt_tokens, row.cached_tokens, row.cache_write_tokens),
        (prompt, cached, written),
        "request {} (step {}, {})",
        row.request,
        row.step,
        row.kind.as_str()
    );
    assert!(
        (row.cost_usd - cost).abs() < 1e-9,
        "request {}: cost {} != {cost}",
        row.request,
        row.cost_usd
    );
}

fn kinds(replay: &Replay) -> Vec<&str> {
    replay.rows.iter().map(|r| r.kind.as_str()).collect()
}

// keepalive-review, under permission-mode:
// R1 (step 3) = T + S + plan reminder 595 + user 120 = 12,799.
// R2 (step 4) = R1 + reply 90 + results 600 + 2,400 = 15,889; its reply is 700 tokens.
// The wait (step 5) starts when R2 completes. R3 (step 7) = R2 + reply 700 + approval result
// (152 + plan 650 = 802) + exit reminder 41 = 17,432; R4 (step 8) = R3 + 300 + 40 = 17,772.
// A ping re-sends R2's 15,889 tokens with 1 output token.
//
// Clock: R2 is sent at t; it completes at t + TTFT + 700 / 60 s (about t + 13 s), the wait
// lasts 420 s and the approval 10 s, so R3 goes at about t + 443 s. The ping is due 270 s after
// R2 was sent, inside the wait; the next one (t + 540 s) falls after it.

#[test]
fn keepalive_ping_holds_a_5_minute_anthropic_cache_through_a_7_minute_review() {
    let session = load("keepalive-review");
    let r = replay_with(&session, "anthropic", anthropic_5m());
    assert_eq!(kinds(&r), ["reply", "reply", "keepalive", "reply", "reply"]);
    let [r1, r2, ping, r3, r4] = &r.rows[..] else {
        unreachable!()
    };
    // R1 cold: 12,799 written at 5m: 12,799 x 1.25 x $3 + 90 x $15 = $0.04934625.
    assert_row(r1, 12_799, 0, 12_799, 0.049_346_25);
    // R2 reads R1 (12,799 x 0.1) and writes 3,090 (x 1.25): 5,142.4 x $3 + 700 x $15.
    assert_row(r2, 15_889, 12_799, 3_090, 0.025_927_2);
    // The ping: sent 4m30s after R2, on the wait's step, it reads all 15,889 and writes
    // nothing: 1,588.9 x $3 + 1 x $15 = $0.0047817.
    assert_eq!((ping.step, ping.output_tokens), (5, 1));
    assert_eq!(ping.sent_at_ms, r2.sent_at_ms + 270_000);
    assert_eq!(ping.break_text(), "");
    assert_row(ping, 15_889, 15_889, 0, 0.004_781_7);
    // R3, about 173 s after the ping refreshed the entries: reads 15,889, writes 1,543:
    // (1,588.9 + 1,928.75) x $3 + 300 x $15 = $0.01505295.
    assert!(r3.sent_at_ms - ping.sent_at_ms < 300_000);
    assert_row(r3, 17_432, 15_889, 1_543, 0.015_052_95);
    // R4 reads R3 and writes 340: (1,743.2 + 425) x $3 + 80 x $15 = $0.0077046.
    assert_row(r4, 17_772, 17_432, 340, 0.007_704_6);

    // Without pings R3 comes about 440 s after R2's entries were written: all expired. It
    // writes the whole 17,432 tokens: 17,432 x 1.25 x $3 + 300 x $15 = $0.06987.
    let mut cold = load("keepalive-review");
    cold.scenario.set_keepalive(None);
    let r = replay_with(&cold, "anthropic", anthropic_5m());
    assert_eq!(kinds(&r), ["reply"; 4]);
    assert_row(&r.rows[2], 17_432, 0, 17_432, 0.069_87);
    assert!(
        r.rows[2].break_text().contains("ttl expired"),
        "{}",
        r.rows[2].break_text()
    );
    // The ping saves 0.06987 - (0.01505295 + 0.0047817) = $0.05003535 on this review.
    let with: f64 = replay_with(&session, "anthropic", anthropic_5m())
        .rows
        .iter()
        .map(|r| r.cost_usd)
        .sum();
    let without: f64 = r.rows.iter().map(|r| r.cost_usd).sum();
    assert!((without - with - 0.050_035_35).abs() < 1e-9);
}

#[test]
fn keepalive_ping_is_pure_cost_under_1_hour_entries() {
    // The default `anthropic` writes 1 h entries: R3 reads 15,889 with or without the ping, and
    // the ping adds its $0.0047817 (15,889 x 0.1 x $3 + $15 / M).
    let with = replay(&load("keepalive-review"), "anthropic");
    let mut plain = load("keepalive-review");
    plain.scenario.set_keepalive(None);
    let without = replay(&plain, "anthropic");
    assert_row(&with.rows[2], 15_889, 15_889, 0, 0.004_781_7);
    assert_eq!(with.rows[3].cached_tokens, 15_889);
    assert_eq!(without.rows[2].cached_tokens, 15_889);
    let sum = |r: &Replay| r.rows.iter().map(|x| x.cost_usd).sum::<f64>();
    assert!((sum(&with) - sum(&without) - 0.004_781_7).abs() < 1e-9);
}

#[test]
fn keepalive_ping_keeps_the_pinged_units_of_an_automatic_cache() {
    // gpt-4o on `openai`, entries forgotten after 5 idle minutes.
    // R1 writes its 99 whole units; with its 90-token reply the stream holds 12,889 tokens =
    // 100 units. R2 reads those 100 units (12,800) and, with its reply, leaves 16,589 tokens
    // (129 units): units 0-123 lie inside R2's prompt (15,872 tokens), units 124-128 hold
    // R2's prompt tail and reply, written when R2 completed.
    // The ping (R2's prompt again) reads 124 units = 15,872 and refreshes only those; 17 tokens
    // are plain input: (17 + 15,872 x 0.5) x $2.50 + 1 x $10 = $0.0198925.
    // R3 (about 173 s after the ping, 430 s after R2 completed) reads the refreshed 15,872;
    // unit 124, never used since R2, is gone. R3 writes floor(17,432 / 128) x 128 - 15,872 =
    // 1,536 (free): (1,560 + 15,872 x 0.5) x $2.50 + 300 x $10 = $0.02674.
    let session = on_gpt_4o(load("keepalive-review"));
    let r = replay_with(&session, "openai", openai_5m());
    assert_eq!(kinds(&r), ["reply", "reply", "keepalive", "reply", "reply"]);
    assert_row(&r.rows[2], 15_889, 15_872, 0, 0.019_892_5);
    assert_row(&r.rows[3], 17_432, 15_872, 1_536, 0.026_74);

    // Without the ping every unit has been idle for more than 5 minutes: R3 reads nothing and
    // pays 17,432 x $2.50 + 300 x $10 = $0.04658.
    let mut cold = on_gpt_4o(load("keepalive-review"));
    cold.scenario.set_keepalive(None);
    let r = replay_with(&cold, "openai", openai_5m());
    assert_row(&r.rows[2], 17_432, 0, 17_408, 0.046_58);
}

#[test]
fn keepalive_pings_count_from_the_last_request_sent() {
    // Every 2 minutes: pings at R2 + 120, 240 and 360 s; R2 + 480 s is past the wait's end
    // (R2 + about 433 s). Under 5 m entries each reads the 15,889 tokens the previous one
    // refreshed.
    let mut s = load("keepalive-review");
    s.scenario.set_keepalive(Some(Duration::from_secs(120)));
    let r = replay_with(&s, "anthropic", anthropic_5m());
    let pings: Vec<&RequestRow> = r
        .rows
        .iter()
        .filter(|x| x.kind.as_str() == "keepalive")
        .collect();
    let sent = r.rows[1].sent_at_ms;
    assert_eq!(
        pings
            .iter()
            .map(|p| p.sent_at_ms - sent)
            .collect::<Vec<_>>(),
        [120_000, 240_000, 360_000]
    );
    assert!(pings.iter().all(|p| p.cached_tokens == 15_889));

    // Every 10 s: the first ping is already overdue when the wait starts (R2 + 10 s comes
    // before R2 completes), so it goes at the wait's start, then every 10 s while the wait
    // lasts: 420 s / 10 s = 42 pings.
    s.scenario.set_keepalive(Some(Duration::from_secs(10)));
    let r = replay_with(&s, "anthropic", anthropic_5m());
    let pings: Vec<&RequestRow> = r
        .rows
        .iter()
        .filter(|x| x.kind.as_str() == "keepalive")
        .collect();
    assert_eq!(pings.len(), 42);
    let r2 = &r.rows[1];
    let wait_start = r2.sent_at_ms + r2.ttft_ms.round() as u64 + 700 * 1000 / 60 + 1;
    assert!(
        pings[0].sent_at_ms.abs_diff(wait_start) <= 1,
        "{}",
        pings[0].sent_at_ms
    );
    assert!(pings
        .windows(2)
        .all(|w| w[1].sent_at_ms - w[0].sent_at_ms == 10_000));
}

// compact-summary, under permission-mode:
// R1 (step 2) = T + S + user 150 = 12,234; R2 = R1 + 120 + 3,000 = 15,354; R3 = R2 + 200 + 800
// + 2,600 = 18,954 (reply 400). The summarisation request (step 5) = R3 + reply 400 +
// instruction 1,902 = 21,256, output 2,400 (the summary). R5 (step 7) = T + S + summary 2,400 +
// user 100 = 14,584.

#[test]
fn compaction_request_reads_the_cached_conversation_anthropic() {
    let r = replay(&load("compact-summary"), "anthropic");
    assert_eq!(
        kinds(&r),
        ["reply", "reply", "reply", "compaction", "reply"]
    );
    let c = &r.rows[3];
    assert_eq!((c.step, c.output_tokens), (5, 2_400));
    // It reads R3's 18,954 (entry at R3's last block, 2 blocks back) and writes 2,302 at 1 h:
    // (1,895.4 + 4,604) x $3 + 2,400 x $15 = $0.0554982.
    assert_row(c, 21_256, 18_954, 2_302, 0.055_498_2);
    // The new conversation reads the tools/system entry (12,084) and writes 2,500 at 1 h:
    // (1,208.4 + 5,000) x $3 + 150 x $15 = $0.0208752.
    assert_row(&r.rows[4], 14_584, 12_084, 2_500, 0.020_875_2);
}

#[test]
fn compaction_without_tools_matches_nothing_cached() {
    // Codex CLI's local compaction leaves the tools out: S + conversation 7,270 + instruction
    // 1,902 = 15,772 tokens, none of which continues a cached prefix; all written at 1 h:
    // 15,772 x 2 x $3 + 2,400 x $15 = $0.130632. The next request (with tools) still reads the
    // tools/system entry.
    let mut s = load("compact-summary");
    let Step::Compact(c) = &mut s.scenario.steps[4] else {
        panic!("step 5 is the compaction")
    };
    c.tools = false;
    let r = replay(&s, "anthropic");
    assert_row(&r.rows[3], 15_772, 0, 15_772, 0.130_632);
    assert_eq!(r.rows[4].cached_tokens, 12_084);

    // A keep-alive wait right after the compaction pings nothing: the restarted conversation
    // has sent nothing yet (the summarisation prompt is not its prefix).
    let mut waiting = load("compact-summary");
    waiting.scenario.steps.insert(
        5,
        Step::Wait(WaitDuration(
            Duration::from_secs(5 * 60),
            Some(Duration::from_secs(60)),
        )),
    );
    let r = replay(&waiting, "anthropic");
    assert_eq!(
        kinds(&r),
        ["reply", "reply", "reply", "compaction", "reply"]
    );

    // `request = false`: no request of its own (4 rows), the summary still replaces the history.
    let Step::Compact(c) = &mut s.scenario.steps[4] else {
        unreachable!()
    };
    c.request = false;
    let r = replay(&s, "anthropic");
    assert_eq!(kinds(&r), ["reply"; 4]);
    assert_eq!(r.rows[3].prompt_tokens, 14_584);
}

#[test]
fn compaction_request_on_an_automatic_cache() {
    // gpt-4o on `openai` (whole 128-token units; each request leaves prompt + reply):
    // R1 + reply = 12,354 -> 96 units; R2 reads 12,288, + reply = 15,554 -> 121 units; R3 reads
    // 15,488, + reply = 19,354 -> 151 units. The summarisation request reads 19,328 and writes
    // floor(21,256 / 128) x 128 - 19,328 = 1,920 (free):
    // (1,928 + 19,328 x 0.5) x $2.50 + 2,400 x $10 = $0.05298.
    // R5 shares T + S = 12,084 tokens with it: 94 units = 12,032, and writes 113 x 128 -
    // 12,032 = 2,432: (2,552 + 12,032 x 0.5) x $2.50 + 150 x $10 = $0.02292.
    let r = replay(&on_gpt_4o(load("compact-summary")), "openai");
    assert_eq!(
        kinds(&r),
        ["reply", "reply", "reply", "compaction", "reply"]
    );
    assert_eq!(r.rows[2].cached_tokens, 15_488);
    assert_row(&r.rows[3], 21_256, 19_328, 1_920, 0.052_98);
    assert_row(&r.rows[4], 14_584, 12_032, 2_432, 0.022_92);
}

// date-line-change, under permission-mode: R1 = T + S + user 200 = 12,284; R2 = R1 + 150 +
// 2,000 = 14,434; the patch changes tokens 3,600..3,612 of system block 2; R3 = R2 + 300 +
// user 80 = 14,814.

#[test]
fn edit_system_patch_breaks_anthropic_at_the_edited_block() {
    // Only the entry at system block 1 (8,384 tokens) still matches: R3 reads it and writes the
    // remaining 6,430 at 1 h: (838.4 + 12,860) x $3 + 120 x $15 = $0.0428952.
    let r = replay(&load("date-line-change"), "anthropic");
    assert_row(&r.rows[0], 12_284, 0, 12_284, 0.075_954);
    assert_row(&r.rows[1], 14_434, 12_284, 2_150, 0.021_085_2);
    assert_row(&r.rows[2], 14_814, 8_384, 6_430, 0.042_895_2);
    assert!(
        r.rows[2]
            .break_text()
            .starts_with("system: prefix changed at system#2@step5"),
        "{}",
        r.rows[2].break_text()
    );
}

#[test]
fn edit_system_patch_keeps_the_tokens_before_the_date_line_automatic() {
    // The prompt is unchanged up to 8,384 + 3,600 = 11,984 tokens: 93 units = 11,904 read.
    // Writes: 115 x 128 - 11,904 = 2,816 (free): (2,910 + 11,904 x 0.5) x $2.50 + 120 x $10 =
    // $0.023355.
    let r = replay(&on_gpt_4o(load("date-line-change")), "openai");
    assert_row(&r.rows[2], 14_814, 11_904, 2_816, 0.023_355);

    // Replacing the block instead (3,712 new tokens) keeps only what precedes it: 8,384 ->
    // 65 units = 8,320 read on `openai`; `anthropic` reads the system block 1 entry (8,384).
    let mut s = on_gpt_4o(load("date-line-change"));
    s.scenario.steps[4] = Step::EditSystem(SystemEdit {
        block: 2,
        tokens: Some(3_712),
        ..SystemEdit::default()
    });
    let r = replay(&s, "openai");
    assert_eq!(
        (r.rows[2].prompt_tokens, r.rows[2].cached_tokens),
        (14_826, 8_320)
    );
    let r = replay(&s, "anthropic");
    assert_eq!(
        (r.rows[2].cached_tokens, r.rows[2].cache_write_tokens),
        (8_384, 6_442)
    );
}

// mcp-tool-churn, under permission-mode. Tools: the nine built-in ones (5,484), then
// mcp__db__query 480 (starts at token 5,484), mcp__github__create_pr 610 (5,964),
// mcp__github__search_issues 520: T = 7,094, T + S = 13,694.
// R1 = 13,694 + 150 = 13,844. create_pr re-rendered at 640: R2 = 13,724 + 150 + 100 + 900 + 60 =
// 14,934. search_issues and create_pr swap places (same size): R3 = 14,934 + 120 + 60 = 15,114.
// db_query withdrawn: R4 = 15,114 - 480 + 120 + 60 = 14,814.

#[test]
fn tool_changes_invalidate_everything_on_anthropic() {
    // No breakpoint lies before the changed tool: each request writes its whole prompt at 1 h,
    // x 2 x $3, plus 120 x $15 of output.
    let r = replay(&load("mcp-tool-churn"), "anthropic");
    assert_row(&r.rows[0], 13_844, 0, 13_844, 0.084_564);
    assert_row(&r.rows[1], 14_934, 0, 14_934, 0.091_404);
    assert_row(&r.rows[2], 15_114, 0, 15_114, 0.092_484);
    assert_row(&r.rows[3], 14_814, 0, 14_814, 0.090_684);
    let reasons: Vec<String> = r.rows.iter().map(|x| x.break_text()).collect();
    assert_eq!(
        reasons[1..],
        [
            "tools: prefix changed at tool:mcp__github__create_pr@step3 (token 5964)",
            "tools: prefix changed at tool:mcp__github__search_issues (token 5964)",
            "tools: prefix changed at tool:mcp__github__search_issues (token 5484)",
        ]
    );
}

#[test]
fn tool_changes_keep_the_tokens_before_them_on_an_automatic_cache() {
    // gpt-4o on `openai`:
    // R2: shared up to create_pr (5,964) -> 46 units = 5,888; writes 116 x 128 - 5,888 = 8,960:
    //     (9,046 + 2,944) x $2.50 + 120 x $10 = $0.031175.
    // R3: the swap changes slot 10 (token 5,964) -> 5,888; writes 118 x 128 - 5,888 = 9,216:
    //     (9,226 + 2,944) x $2.50 + $0.0012 = $0.031625.
    // R4: the removal changes slot 9 (token 5,484) -> 42 units = 5,376; writes 115 x 128 -
    //     5,376 = 9,344: (9,438 + 2,688) x $2.50 + $0.0012 = $0.031515.
    let r = replay(&on_gpt_4o(load("mcp-tool-churn")), "openai");
    assert_row(&r.rows[1], 14_934, 5_888, 8_960, 0.031_175);
    assert_row(&r.rows[2], 15_114, 5_888, 9_216, 0.031_625);
    assert_row(&r.rows[3], 14_814, 5_376, 9_344, 0.031_515);

    // A re-render of the same size is still new content: R2 then has 14,904 tokens and still
    // reads only the 5,888 before create_pr.
    let mut s = on_gpt_4o(load("mcp-tool-churn"));
    let Step::ReplaceTool(def) = &mut s.scenario.steps[2] else {
        panic!("step 3 replaces a tool")
    };
    def.tokens = Some(610);
    let r = replay(&s, "openai");
    assert_eq!(
        (r.rows[1].prompt_tokens, r.rows[1].cached_tokens),
        (14_904, 5_888)
    );
}

#[test]
fn examples_make_the_same_decisions_under_every_strategy_and_cache() {
    let sessions: Vec<Session> = [
        "keepalive-review",
        "compact-summary",
        "date-line-change",
        "mcp-tool-churn",
    ]
    .into_iter()
    .map(load)
    .collect();
    let caches: Vec<String> = cache::CACHE_NAMES.iter().map(|c| c.to_string()).collect();
    let report = engine::run(&sessions, &strategy::all(), &caches, &ReplayEnv::default()).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    for row in report.rows() {
        assert_eq!(row.cached_tokens + row.recomputed_tokens, row.prompt_tokens);
        assert!(row.cache_write_tokens <= row.recomputed_tokens);
    }
}

fn load_err(steps: &str) -> String {
    let text = format!(
        "name = \"x\"\nmodel = \"claude-sonnet-4-5\"\nsystem = [{{ tokens = 100 }}, {{ tokens = 50 }}]\n\
         tools = [{{ name = \"Read\", tokens = 10 }}, {{ name = \"Grep\", tokens = 10 }}, {{ name = \"Agent\", tokens = 10 }}]\n\
         [[steps]]\nuser = \"hi\"\n{steps}"
    );
    let e = load_str(&text, Path::new("s.toml")).unwrap_err();
    format!("{} | {}", e.message, e.hint.unwrap_or_default())
}

#[test]
fn bad_new_steps_are_rejected_with_a_fix() {
    let e = load_err("[[steps]]\nedit_system = { block = 3, tokens = 10 }\n");
    assert!(e.contains("block 3 does not exist"), "{e}");
    let e = load_err("[[steps]]\nedit_system = { block = 2, patch_at = 45, patch_tokens = 10 }\n");
    assert!(e.contains("system block 2 has 50 tokens"), "{e}");
    let e = load_err(
        "[[steps]]\nedit_system = { block = 1, tokens = 10, patch_at = 1, patch_tokens = 2 }\n",
    );
    assert!(e.contains("either a replacement"), "{e}");
    let e = load_err("[[steps]]\nreorder_tools = [\"Grep\", \"Edit\"]\n");
    assert!(e.contains("reorder_tools `Edit`"), "{e}");
    let e = load_err("[[steps]]\nreplace_tool = { name = \"Edit\", tokens = 5 }\n");
    assert!(e.contains("replace_tool `Edit`"), "{e}");
    let e = load_err("[[steps]]\nwait = { duration = \"7m\", keepalive = \"soon\" }\n");
    assert!(e.contains("invalid keepalive `soon`"), "{e}");
    let e = load_err(
        "[[steps]]\nassistant = { tokens = 5 }\n[[steps]]\n[[steps.agents]]\nname = \"a\"\nsystem = { tokens = 5 }\ntools = [\"Read\"]\nprompt = { tokens = 5 }\n[[steps.agents.steps]]\nwait = { duration = \"1m\", keepalive = \"30s\" }\n[[steps.agents.steps]]\nassistant = { tokens = 5 }\n",
    );
    assert!(e.contains("main-stream waits only"), "{e}");
}

#[test]
fn wait_round_trips_through_toml() {
    let text = std::fs::read_to_string("scenarios/keepalive-review.toml").unwrap();
    let s = load_str(&text, Path::new("k.toml")).unwrap();
    let again = plancache::scenario::to_toml(&s).unwrap();
    assert!(again.contains("keepalive = \"4m 30s\""), "{again}");
    let back = load_str(&again, Path::new("k2.toml")).unwrap();
    let waits = |s: &plancache::scenario::Scenario| {
        s.steps
            .iter()
            .filter_map(|st| match st {
                Step::Wait(w) => Some(*w),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(waits(&s), waits(&back));
    assert_eq!(
        waits(&s)[0].keepalive(),
        Some(Duration::from_secs(4 * 60 + 30))
    );
}

#[test]
fn keepalive_sweep_axis_adds_the_pings() {
    // One review wait of 7 minutes after the ExitPlanMode request (sent at t, done within a
    // few seconds, d < 60 s). Every minute: pings at t + 60 k s for k = 1..7 (t + 420 s < t + d +
    // 420 s; t + 480 s is past the wait), so the "1m" point sends 7 requests more; the summary
    // counts replies, so its `requests` are the same and the pings show in the cost only.
    let text = r#"
name = "keepalive"
[base]
seed = 5
review_wait = "7m"
exploration_rounds = 2
implementation_turns = 2
[grid]
keepalive = ["off", "1m"]
strategy = ["permission-mode"]
cache = ["anthropic"]
"#;
    let sweep = Sweep::parse(text, Path::new("keepalive.toml")).unwrap();
    assert!(sweep.header().contains(&"keepalive".to_string()));
    let rows = plancache::sweep::run(
        &sweep,
        Shard::all(),
        &Generated::default(),
        &ReplayEnv::default(),
    )
    .unwrap();
    let col = |name: &str| sweep.header().iter().position(|h| h == name).unwrap();
    let requests = |row: &Vec<String>| row[col("requests")].parse::<usize>().unwrap();
    assert_eq!(rows[0][col("keepalive")], "off");
    assert_eq!(requests(&rows[1]), requests(&rows[0]));
    assert_ne!(rows[1][col("cost_usd")], rows[0][col("cost_usd")]);
    let bad = text.replace("\"1m\"", "\"often\"");
    let e = Sweep::parse(&bad, Path::new("keepalive.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("[grid] keepalive"), "{e}");
}

#[test]
fn the_schema_describes_the_new_steps() {
    let schema = plancache::scenario::files::scenario_schema();
    let v: serde_json::Value = serde_json::from_str(&schema).unwrap();
    let steps = v["$defs"]["Step"].to_string();
    for key in ["edit_system", "reorder_tools", "replace_tool"] {
        assert!(steps.contains(&format!("\"{key}\"")), "{key} missing");
    }
    let wait = v["$defs"]["WaitTable"]["properties"].to_string();
    assert!(wait.contains("\"keepalive\"") && wait.contains("\"duration\""));
    let compact = v["$defs"]["Compact"]["properties"].to_string();
    for key in ["instruction_tokens", "request", "tools"] {
        assert!(compact.contains(&format!("\"{key}\"")), "{key} missing");
    }
    let edit = v["$defs"]["SystemEdit"]["properties"].to_string();
    for key in [
        "block",
        "patch_at",
        "patch_tokens",
        "tokens",
        "text",
        "file",
    ] {
        assert!(edit.contains(&format!("\"{key}\"")), "{key} missing");
    }
}

/// A scenario built in code (not read through the loader) gets the loader's checks in
/// `Session::new`: the engine relies on them and does not repeat them.
#[test]
fn a_scenario_built_in_code_is_checked_as_a_loaded_one() {
    use std::sync::Arc;
    let text = "name = \"x\"\nmodel = \"claude-sonnet-4-5\"\nsystem = { tokens = 10 }\ntools = [{ name = \"Read\", tokens = 10 }, { name = \"Agent\", tokens = 10 }]\n[[steps]]\nuser = \"hi\"\n[[steps]]\nassistant = { tokens = 5 }\n[[steps]]\nagents = [{ name = \"a\", system = { tokens = 5 }, tools = [\"Read\"], prompt = { tokens = 5 }, steps = [{ wait = { duration = \"1m\", keepalive = \"30s\" } }, { assistant = { tokens = 5 } }] }]\n";
    let path = Path::new("built.toml");
    // The loader refuses a keep-alive wait in a subagent.
    let loaded = load_str(text, path).unwrap_err();
    // The same scenario deserialized directly (as code would build it) is refused by
    // Session::new with the same message, before any replay.
    let scenario: plancache::scenario::Scenario = toml::from_str(text).unwrap();
    let tok = Arc::new(plancache::prompt::Tokenizer::new(scenario.tokenizer));
    let built = match Session::new(scenario, path, "", tok) {
        Ok(_) => panic!("Session::new accepted a keep-alive wait in a subagent"),
        Err(e) => e,
    };
    assert_eq!(built.message, loaded.message);
    assert!(built.message.contains("keepalive"), "{}", built.message);
}
