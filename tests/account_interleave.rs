//! `account` replays a session's streams on one cache and one clock (issue 18 item 1): parallel
//! agents of a session read what the others wrote, in send order, as `validate` replays them.
//! The figure below is derived by hand in the comments.

use std::path::Path;

use plancache::account::{self, AccountOptions, Sharing};
use plancache::engine::ReplayEnv;
use plancache::import::discover;

/// A Claude Code record pair per request: the user's turn and the assistant's reply with its
/// usage (all of the prompt uncached: the prediction never reads the billed cache counters).
fn records(id: &str, agent: Option<&str>, reqs: &[(&str, u64)]) -> String {
    let mut lines = Vec::new();
    for (k, (at, prompt)) in reqs.iter().enumerate() {
        let base = serde_json::json!({
            "sessionId": id, "cwd": "/repo", "version": "2.0.14", "timestamp": at,
            "isSidechain": agent.is_some(), "agentId": agent,
        });
        let mut user = base.clone();
        user["type"] = "user".into();
        user["uuid"] = format!("{id}-{agent:?}-u{k}").into();
        // Agent B's questions are longer than A's: count-only messages are told apart by size.
        let who = match agent {
            Some("b") => "agent b, who asks with a few more words than agent a",
            Some(_) => "agent a",
            None => "main",
        };
        user["message"] =
            serde_json::json!({"role": "user", "content": format!("question {k} from {who}")});
        let mut assistant = base;
        assistant["type"] = "assistant".into();
        assistant["uuid"] = format!("{id}-{agent:?}-a{k}").into();
        assistant["requestId"] = format!("req_{id}_{agent:?}_{k}").into();
        assistant["message"] = serde_json::json!({
            "id": format!("msg_{id}_{agent:?}_{k}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": format!("answer {k} from {agent:?}")}],
            "usage": {"input_tokens": prompt, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 10}
        });
        lines.push(user.to_string());
        lines.push(assistant.to_string());
    }
    lines.join("\n") + "\n"
}

/// One session: a main thread (one request at 10:00) and two subagents of one toolset and
/// system prompt (Claude Code 2.0: every TTL 5 minutes). Agent A sends at 10:01 and 10:08,
/// agent B at 10:04 (first prompts of 20,000 and 20,050 tokens).
fn write_session(dir: &Path) {
    let project = dir.join("-repo");
    let subs = project.join("s1").join("subagents");
    std::fs::create_dir_all(&subs).unwrap();
    std::fs::write(
        project.join("s1.jsonl"),
        records("s1", None, &[("2025-10-01T10:00:00.000Z", 30_000)]),
    )
    .unwrap();
    std::fs::write(
        subs.join("agent-a.jsonl"),
        records(
            "s1",
            Some("a"),
            &[
                ("2025-10-01T10:01:00.000Z", 20_000),
                ("2025-10-01T10:08:00.000Z", 20_100),
            ],
        ),
    )
    .unwrap();
    std::fs::write(
        subs.join("agent-b.jsonl"),
        records("s1", Some("b"), &[("2025-10-01T10:04:00.000Z", 20_050)]),
    )
    .unwrap();
}

#[test]
fn parallel_agents_read_what_the_other_agent_refreshed() {
    let tmp = tempfile::tempdir().unwrap();
    write_session(tmp.path());
    let sessions = discover::discover(tmp.path()).unwrap();
    assert_eq!(sessions.len(), 1);
    let opts = AccountOptions {
        sharing: Sharing::None,
        ..AccountOptions::default()
    };
    let env = ReplayEnv::default();
    let a = account::run(&sessions, &opts, &env, &indicatif::ProgressBar::hidden()).unwrap();
    assert!(a.failures.is_empty(), "{:?}", a.failures);
    let q = &a.sessions[0].requests;
    let find = |stream: &str, n: usize| {
        q.iter()
            .find(|r| r.stream == stream && r.request == n)
            .unwrap_or_else(|| panic!("{stream} #{n} in {q:#?}"))
    };
    // Main and agents are offered the same built-in toolset (no tool is called), sized from the
    // bundled estimates: one tools block of T tokens. The agents also share one system block
    // (sized once for every subagent of the session): S tokens.
    let t: u64 = plancache::import::tool_sizes::BUILT_IN
        .iter()
        .map(|n| u64::from(plancache::import::tool_sizes::estimate(n).unwrap_or(0)))
        .sum();
    assert_eq!(t, 11_793);
    let (a1, a2, b1) = (find("agent-a", 1), find("agent-a", 2), find("agent-b", 1));
    // 10:01, A's first request: reads the tools main wrote at 10:00, nothing else.
    assert_eq!(a1.predicted.read, t);
    // 10:04, B's first request: reads the tools (main 10:00, refreshed by A at 10:01) and the
    // agents' system block A wrote at 10:01 (5-minute TTL), not A's messages: T + S, and
    // refreshes both until 10:09.
    let s = b1.predicted.read - t;
    assert!(s > 1_000 && t + s < 20_000, "agents' system block {s}");
    // 10:08, A's second request: A's messages expired at 10:06 (written 10:01), but tools and
    // system are alive because B refreshed them at 10:04: A reads exactly T + S. Replayed one
    // stream after another (main, A's whole stream, then B's), as `account` did before, A's
    // second request found everything expired since 10:06 (A's first request was the last to
    // touch it) and read 0.
    assert_eq!(a2.predicted.read, t + s);
    // The session in all: T + 2 (T + S) read (51,781 with S = 8,201), no predicted break. The
    // sequential replay of main's build (600c4a5) read 11,793 in all on this session (A's first
    // request only; A's second broke on `tools: ttl expired`, and B's, replayed after it on a
    // clock gone back, read 0 too).
    let read: u64 = q.iter().map(|r| r.predicted.read).sum();
    assert_eq!(read, t + 2 * (t + s));
    assert_eq!(read, 51_781);
    assert!(q.iter().all(|r| !r.predicted_break));
    assert_eq!(a2.predicted.prompt, 20_100);
}
