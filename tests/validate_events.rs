//! One hand-made transcript per event kind the transcript can show (tests/fixtures/transcripts/
//! events/generate.py writes them from the record shapes, with the usage a provider bills under
//! Claude Code's layout: breakpoints on the system prompt and on the last block). Each is
//! validated in `transcript` mode against the `anthropic` model, and the request after the event
//! is checked against what the documented cache rules give.

use std::path::{Path, PathBuf};

use plancache::engine::ReplayEnv;
use plancache::import::{claude_code, Harness, Item};
use plancache::validate::{validate, RequestCheck, ValidateOptions, Validation};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts/events")
        .join(name)
}

fn run(name: &str) -> Validation {
    let t = Harness::ClaudeCode.read(&fixture(name)).expect("readable");
    assert!(t.skipped.is_empty(), "{name}: {:?}", t.skipped);
    validate(&[t], &ValidateOptions::default(), &ReplayEnv::default()).expect("validates")
}

fn req<'a>(v: &'a Validation, id: &str) -> &'a RequestCheck {
    v.checks.iter().find(|c| c.request_id == id).expect(id)
}

#[test]
fn a_compact_boundary_restarts_from_the_summary() {
    let v = run("compaction.jsonl");
    let c3 = req(&v, "req_c3");
    // The first message "Hi" is one o200k token, so the static prefix is 15000 - 1 = 14999:
    // after the compaction only tools + system are still cached, as billed.
    assert_eq!((c3.recorded_read, c3.predicted_read), (14999, 14999));
    assert!(c3.recorded_break && c3.predicted_break);
    assert!(c3.events.starts_with("compaction"), "{}", c3.events);
    assert_eq!(c3.predicted_prompt, c3.recorded_prompt);
}

#[test]
fn a_microcompaction_keeps_the_prefix_before_the_first_cleared_result() {
    let v = run("microcompact.jsonl");
    let m4 = req(&v, "req_m4");
    // t2's result was cleared in place: the entry req_m2 wrote (45000 tokens, ending with t1's
    // result) still serves; a full restart would read 14999 and predict a break.
    assert_eq!((m4.recorded_read, m4.predicted_read), (45000, 45000));
    assert!(!m4.recorded_break && !m4.predicted_break);
    assert_eq!(m4.predicted_prompt, m4.recorded_prompt);
    assert!(m4.events.contains("microcompact_boundary"), "{}", m4.events);
}

#[test]
fn a_shrink_without_a_record_is_a_new_conversation_after_the_static_prefix() {
    let v = run("rewind.jsonl");
    let w4 = req(&v, "req_w4");
    // 50,000 -> 30,100 tokens with no compaction record: sent anew, as 14 of 19 such shrinks
    // in the shared notes' corpus were. The read falls back to tools + system: the first prompt
    // (15,000) less the one-token "Hi" = 14,999, below half of 50,000: a break.
    assert_eq!((w4.recorded_read, w4.predicted_read), (14999, 14999));
    assert!(w4.recorded_break && w4.predicted_break);
    assert_eq!(w4.predicted_prompt, w4.recorded_prompt);
    assert!(w4
        .events
        .contains("new conversation after the static prefix"));
}

#[test]
fn an_edited_memory_file_breaks_the_prefix_after_tools_and_system() {
    let v = run("memory_edit.jsonl");
    let e3 = req(&v, "req_e3");
    assert_eq!((e3.recorded_read, e3.predicted_read), (14999, 14999));
    assert!(e3.recorded_break && e3.predicted_break);
    assert!(e3.events.contains("CLAUDE.md"), "{}", e3.events);
}

#[test]
fn a_skill_file_written_through_zeds_acp_tools_breaks_after_tools_and_system_two_requests_later() {
    let v = run("acp_skill.jsonl");
    // req_s2 carries the write's result and still reads req_s1's prompt.
    let s2 = req(&v, "req_s2");
    assert_eq!((s2.recorded_read, s2.predicted_read), (15000, 15000));
    let s3 = req(&v, "req_s3");
    assert_eq!((s3.recorded_read, s3.predicted_read), (14999, 14999));
    assert!(s3.recorded_break && s3.predicted_break);
    assert!(s3.events.contains("ACP"), "{}", s3.events);
    // The naive rule reads the previous prompt.
    assert_eq!(s3.naive_read, 40000);
    // The CLI's own Write of the same file changes no prefix.
    let v = run("cli_skill.jsonl");
    let s3 = req(&v, "req_s3");
    assert_eq!((s3.recorded_read, s3.predicted_read), (40000, 40000));
    assert!(s3.events.is_empty(), "{}", s3.events);
}

#[test]
fn deltas_dates_skills_and_todos_are_appended_at_the_tail() {
    let t = claude_code::parse(&std::fs::read_to_string(fixture("reminders.jsonl")).unwrap());
    let kinds: Vec<&str> = t.streams[0]
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Reminder { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "deferred_tools_delta",
            "mcp_instructions_delta",
            "date_change",
            "skill_listing",
            "task_reminder"
        ]
    );
    let v = run("reminders.jsonl");
    let r2 = req(&v, "req_r2");
    assert_eq!((r2.recorded_read, r2.predicted_read), (15000, 15000));
    assert!(!r2.predicted_break);
}

/// An unlogged request 4 min after the previous response refreshed the 5 m entries: the next
/// request, more than 5 min after the previous logged one, still reads them.
fn refreshed(name: &str, id: &str, what: &str) {
    let v = run(name);
    assert_eq!(v.checks.len(), 2, "unlogged requests yield no row");
    let r = req(&v, id);
    assert_eq!(
        (r.recorded_read, r.predicted_read),
        (15000, 15000),
        "{name}"
    );
    assert!(!r.predicted_break, "{name}");
    assert!(r.events.contains(what), "{name}: {}", r.events);
}

#[test]
fn an_away_summary_refreshes_the_cache() {
    refreshed("away_summary.jsonl", "req_a2", "away_summary");
}

#[test]
fn api_error_retries_refresh_the_cache() {
    refreshed("api_error.jsonl", "req_x2", "api_error");
}

#[test]
fn a_request_interrupted_before_its_first_block_refreshes_the_cache() {
    // The interrupted request was the conversation's own next request: it wrote its prompt,
    // and req_i2 reads through it (15000 + the reply's 31 + the input's 31), not r1's 15000.
    let v = run("interrupt.jsonl");
    assert_eq!(v.checks.len(), 2, "unlogged requests yield no row");
    let r = req(&v, "req_i2");
    assert_eq!((r.recorded_read, r.predicted_read), (15062, 15062));
    assert!(r.events.contains("interrupted"), "{}", r.events);
    // The naive rule sees only the logged requests: 8 min after r1, its entry is gone.
    assert_eq!(r.naive_read, 0);
}

#[test]
fn a_request_interrupted_after_a_tool_result_wrote_the_result() {
    let v = run("interrupt_tool.jsonl");
    assert_eq!(v.checks.len(), 2);
    let r = req(&v, "req_j2");
    // 15000 + the call (104) + the result (93): the interrupted request carried the result.
    assert_eq!((r.recorded_read, r.predicted_read), (15197, 15197));
    assert_eq!(r.naive_read, 15000);
}

#[test]
fn claude_codes_own_stop_hook_caches_the_final_reply() {
    let v = run("stop_callback.jsonl");
    assert_eq!(v.checks.len(), 3);
    // After the in-process (`callback`) Stop hook the next turn reads through the reply (57).
    let k2 = req(&v, "req_k2");
    assert_eq!((k2.recorded_read, k2.predicted_read), (15057, 15057));
    assert!(k2.events.contains("Stop hook"), "{}", k2.events);
    // After a user's shell-command Stop hook nothing was sent: r2's prompt is read.
    let k3 = req(&v, "req_k3");
    assert_eq!((k3.recorded_read, k3.predicted_read), (15100, 15100));
    assert!(k3.events.is_empty(), "{}", k3.events);
}

#[test]
fn the_ttl_runs_from_the_end_of_the_response_and_a_request_after_a_sleep_is_sent_late() {
    let t = Harness::ClaudeCode.read(&fixture("timing.jsonl")).unwrap();
    // Two records of req_t2 with different usage: the last one is billed (15540 = 3 + 540 +
    // 15000 - 3).
    let usage: Vec<u64> = t.streams[0]
        .requests()
        .map(|r| r.usage.prompt_tokens())
        .collect();
    assert_eq!(usage, vec![15000, 15540, 16000, 16500]);
    let v = run("timing.jsonl");
    // req_t2 is sent 330 s after req_t1 was sent but 270 s after it finished (its last record,
    // at 60 s): the 5 m entry still serves.
    let t2 = req(&v, "req_t2");
    assert_eq!((t2.recorded_read, t2.predicted_read), (15000, 15000));
    // req_t3's record is written 8 min after its user message; it was sent then, 120 s after
    // req_t2 finished: a hit.
    let t3 = req(&v, "req_t3");
    assert_eq!((t3.recorded_read, t3.predicted_read), (15540, 15540));
    assert_eq!(t3.sent_at_ms, 456_000);
    // req_t4's record is written 60 min after its input (more than LATE_SEND_MS): sent when the
    // machine woke, at 4,600 s, 3,664 s after req_t3 finished (936 s): past the 5 m TTL.
    let t4 = req(&v, "req_t4");
    assert_eq!(t4.sent_at_ms, 4_600_000);
    assert_eq!((t4.recorded_read, t4.predicted_read), (0, 0));
    assert!(t4.recorded_break && t4.predicted_break);
}

#[test]
fn permission_mode_records_switch_modes_and_opusplan_misses_are_flagged() {
    let v = run("opusplan.jsonl");
    let flagged: Vec<(&str, &str)> = v
        .model_findings
        .iter()
        .map(|f| (f.request_id.as_str(), f.expected))
        .collect();
    // req_o3 ran in default mode on Opus, req_o4 in plan mode on Sonnet.
    assert_eq!(flagged, vec![("req_o3", "sonnet"), ("req_o4", "opus")]);
    // Caches are per model: req_o2 (first Sonnet request) reads nothing; req_o3 reads the Opus
    // entry req_o1 wrote, req_o4 the Sonnet entry req_o2 wrote.
    let reads: Vec<(u64, u64)> = v
        .checks
        .iter()
        .map(|c| (c.recorded_read, c.predicted_read))
        .collect();
    assert_eq!(reads[1..], [(0, 0), (15000, 15000), (15100, 15100)]);
    assert!(v.to_markdown().contains("| req_o4 |"));
}

#[test]
fn streams_of_a_session_share_one_cache_in_send_time_order() {
    let v = run("parallel_agents.jsonl");
    let b1 = req(&v, "req_b1");
    let a2 = req(&v, "req_a2");
    // B reads the agents' static prefix A wrote 247 s earlier; A's second request, 496 s after
    // its first finished, reads the same block because B refreshed it at 250-252 s.
    assert!(b1.predicted_read > 5900, "{b1:?}");
    assert_eq!(a2.predicted_read, b1.predicted_read);
    assert_eq!(a2.recorded_read, 5990);
    // Sent 497 s after the main request finished: the main stream's 5 m entries expired.
    assert_eq!(req(&v, "req_p2").predicted_read, 0);
}

#[test]
fn stopping_a_tool_sends_nothing() {
    // The user stopped a tool of a logged request: the marker follows the tool result, and no
    // request was sent. Only the marker right after the user's own input is an unlogged request.
    let lines = [
        r#"{"type":"user","uuid":"u1","timestamp":"2025-11-04T09:00:00.000Z","message":{"role":"user","content":"Hi"}}"#,
        r#"{"type":"assistant","uuid":"a1","timestamp":"2025-11-04T09:00:03.000Z","requestId":"r1","message":{"model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"input_tokens":3,"cache_creation_input_tokens":14997,"cache_read_input_tokens":0}}}"#,
        r#"{"type":"user","uuid":"u2","timestamp":"2025-11-04T09:00:05.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"The user doesn't want to proceed","is_error":true}]}}"#,
        r#"{"type":"user","uuid":"u3","timestamp":"2025-11-04T09:00:05.100Z","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#,
    ];
    let t = claude_code::parse(&lines.join("\n"));
    assert!(!t.streams[0]
        .items
        .iter()
        .any(|i| matches!(i, Item::Unlogged { .. })));
}

/// The quiet 2.1.x session (`quiet.jsonl` + `quiet/subagents/agent-a4f2c9e.jsonl`): every record
/// kind that leaves the prefix alone, gaps just under and just over both TTLs, a stall, api_error
/// retries, plan mode on and off, responses split over several records.
fn quiet(ttl: plancache::import::TtlChoice) -> Validation {
    let files = plancache::import::discover::group(&[fixture("quiet.jsonl")]).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(
        files[0].subagents.len(),
        1,
        "the main file brings its subagent"
    );
    let t = plancache::import::discover::read_session(&files[0]).unwrap();
    assert!(t.skipped.is_empty(), "{:?}", t.skipped);
    let opts = ValidateOptions {
        ttl,
        ..ValidateOptions::default()
    };
    validate(&[t], &opts, &ReplayEnv::default()).unwrap()
}

#[test]
fn records_that_leave_the_prefix_alone_break_nothing() {
    let v = quiet(plancache::import::TtlChoice::Auto);
    let s = v.stats();
    let overall = s.last().unwrap();
    // generate.py's usage: every request reads the previous prompt of its stream, except the two
    // idle gaps over the TTL: req_q9 (3620 s after req_q8 finished, 1 h main thread) and req_g4
    // (315 s after req_g3 finished, 5 m subagent), which read 0.
    assert_eq!(overall.precision, Some(1.0));
    assert_eq!(overall.recall, Some(1.0));
    let breaks: Vec<&str> = v
        .checks
        .iter()
        .filter(|c| c.recorded_break || c.predicted_break)
        .map(|c| c.request_id.as_str())
        .collect();
    assert_eq!(breaks, ["req_q9", "req_g4"]);
    for c in &v.checks {
        assert_eq!(c.predicted_prompt, c.recorded_prompt, "{}", c.request_id);
        assert_eq!(c.predicted_read, c.recorded_read, "{}", c.request_id);
    }
    // req_q3's first record holds a placeholder usage (20950 tokens); the last one is billed.
    assert_eq!(req(&v, "req_q3").recorded_prompt, 21000);
    // The stall: req_g3 is sent when req_g2's tool result was written, not at its late record.
    assert_eq!(req(&v, "req_g3").sent_at_ms, 351_000);
    assert!(req(&v, "req_q8").events.contains("api_error"));
}

#[test]
fn the_ttl_follows_the_billed_class_or_the_version_and_ttl_overrides_it() {
    use plancache::import::TtlChoice;
    // `auto`: the class the main thread's written tokens were billed at (1 h here).
    let v = quiet(TtlChoice::Auto);
    assert_eq!(
        v.imports[0].ttl,
        "1h (main thread: the class its written tokens were billed at)"
    );
    let v = quiet(TtlChoice::Version);
    assert!(
        v.imports[0].ttl.starts_with("1h (Claude Code 2.1.14"),
        "{}",
        v.imports[0].ttl
    );
    // Told the main thread wrote 5 m entries, the replay breaks after every gap over 5 min:
    // req_q4 (1251 s after req_q3 finished) and req_q5 (3585 s) become false breaks.
    let v = quiet(TtlChoice::Fixed(plancache::prompt::Ttl::FiveMinutes));
    assert!(req(&v, "req_q4").predicted_break && !req(&v, "req_q4").recorded_break);
    assert!(req(&v, "req_q5").predicted_break);
    assert_eq!(v.stats().last().unwrap().recall, Some(1.0));
}

#[test]
fn the_compaction_request_refreshes_the_cache() {
    let v = run("compaction_refresh.jsonl");
    // The summarisation request yields no row: three rows for three logged requests.
    assert_eq!(v.checks.len(), 3);
    let k3 = req(&v, "req_k3");
    // Sent 492 s after req_k2 finished, but 220 s after the compaction request (at the
    // compact_boundary, 280 s) read and refreshed the 5 m entries: the system breakpoint's entry
    // (the 14999-token static prefix) still serves. Without that request: a read of 0.
    assert_eq!((k3.recorded_read, k3.predicted_read), (14999, 14999));
    assert_eq!(k3.predicted_prompt, k3.recorded_prompt);
}
