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
        user["message"] = serde_json::json!({"role": "user", "content": format!("question {k}")});
        let mut assistant = base;
        assistant["type"] = "assistant".into();
        assistant["uuid"] = format!("{id}-{agent:?}-a{k}").into();
        assistant["requestId"] = format!("req_{id}_{agent:?}_{k}").into();
        assistant["message"] = serde_json::json!({
            "id": format!("msg_{id}_{agent:?}_{k}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": format!("answer {k}")}],
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
/// agent B at 10:04.
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
        records("s1", Some("b"), &[("2025-10-01T10:04:00.000Z", 20_000)]),
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
    // The agents share one static block (tools + system, sized once for every subagent of the
    // session): S tokens.
    let (a1, a2, b1) = (find("agent-a", 1), find("agent-a", 2), find("agent-b", 1));
    // 10:01, A's first request: nothing cached yet; it writes its whole prompt.
    assert_eq!(a1.predicted.read, 0);
    // 10:04, B's first request: reads the static block A wrote 3 minutes earlier (5-minute
    // TTL), not A's messages: S tokens, and refreshes the block until 10:09.
    let s = b1.predicted.read;
    assert!(s > 15_000 && s < 20_000, "static block {s}");
    // 10:08, A's second request: A's messages expired at 10:06 (written 10:01), but the static
    // block is alive because B refreshed it at 10:04, so A reads exactly S. Replayed one
    // stream after another (A's whole stream, then B's), as `account` did before, A's second
    // request found the block expired since 10:06 and read 0.
    assert_eq!(a2.predicted.read, s);
    assert_eq!(a2.predicted.prompt, 20_100);
}
