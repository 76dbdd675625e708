//! Errors of the new scenario-format features name the file, the place and the fix; the CLI
//! exits 2 on them.

use std::path::Path;

use plancache::scenario::{load_str, ScenarioError};

const HEAD: &str = r#"name = "x"
model = "claude-sonnet-4-5"
system = { tokens = 100 }
context = [{ name = "CLAUDE.md", tokens = 50 }]
[[tools]]
name = "Read"
tokens = 10
[[tools]]
name = "Agent"
tokens = 10
[[tools]]
name = "ExitPlanMode"
tokens = 10
"#;

fn err(steps: &str) -> ScenarioError {
    let text = format!("{HEAD}{steps}");
    load_str(&text, Path::new("bad.toml")).expect_err("must be rejected")
}

#[test]
fn a_call_to_a_removed_tool_names_the_step() {
    let e = err("[[steps]]\nremove_tool = \"Read\"\n[[steps]]\nassistant = { tokens = 5, calls = [{ tool = \"Read\" }] }\n");
    assert_eq!(e.place.as_deref(), Some("step 2 (line 16)"));
    assert_eq!(
        e.message,
        "call 1 uses tool `Read`, which is not offered at this point"
    );
    assert!(e.hint.unwrap().contains("add_tool"));
}

#[test]
fn tool_list_changes_are_checked() {
    let e = err("[[steps]]\nadd_tool = { name = \"Read\", tokens = 5 }\n");
    assert_eq!(e.message, "add_tool `Read`: the tool is already offered");
    let e = err("[[steps]]\nremove_tool = \"Nope\"\n");
    assert_eq!(e.message, "remove_tool `Nope`: no such tool is offered");
    let e = err("[[steps]]\nadd_tool = { name = \"New\" }\n");
    assert_eq!(e.message, "give either `tokens` or `description`/`schema`");
    // An added tool can be called afterwards.
    let text = format!("{HEAD}[[steps]]\nadd_tool = {{ name = \"New\", tokens = 5 }}\n[[steps]]\nassistant = {{ tokens = 5, calls = [{{ tool = \"New\" }}] }}\n");
    assert!(load_str(&text, Path::new("ok.toml")).is_ok());
}

#[test]
fn context_events_are_checked() {
    let e = err("[[steps]]\nedit_context = { name = \"AGENTS.md\", tokens = 5 }\n");
    assert_eq!(
        e.message,
        "edit_context names `AGENTS.md`, which is not a scenario `context` block"
    );
    assert!(e.hint.unwrap().contains("context = [{ name = "));
    let e = err("[[steps]]\ncompact = { summary_tokens = 5, summary = \"s\" }\n");
    assert_eq!(
        e.message,
        "a compaction needs exactly one of `summary_tokens` or `summary`"
    );
    let e = err("[[steps]]\ncompact = { sumary_tokens = 5 }\n");
    assert!(
        e.message.contains("unknown field `sumary_tokens`"),
        "{}",
        e.message
    );
    assert_eq!(e.place.as_deref(), Some("line 15, column 13"));
}

#[test]
fn agents_are_checked() {
    let agent = |extra: &str, steps: &str| {
        format!("[[steps]]\n[[steps.agents]]\nname = \"e\"\nsystem = {{ tokens = 9 }}\nprompt = {{ tokens = 9 }}\n{extra}\n{steps}")
    };
    let one = "[[steps.agents.steps]]\nassistant = { tokens = 5 }\n";
    let e = err(&agent("tools = [\"Grep\"]", one));
    assert_eq!(e.place.as_deref(), Some("step 1 (line 14), agent `e`"));
    assert_eq!(
        e.message,
        "agent tool `Grep` is not one of the session's tools"
    );
    let e = err(&agent("tools = [\"ExitPlanMode\"]", one));
    assert_eq!(
        e.message,
        "agent tool `ExitPlanMode` cannot be given to a subagent"
    );
    let e = err(&agent(
        "tools = [\"Read\"]",
        "[[steps.agents.steps]]\napprove = \"exit\"\n",
    ));
    assert_eq!(
        e.message,
        "a subagent step must be `user`, `assistant` or `wait`"
    );
    assert_eq!(
        e.place.as_deref(),
        Some("step 1 (line 14), agent `e` step 1")
    );
    let e = err(&agent(
        "tools = [\"Read\"]",
        "[[steps.agents.steps]]\nassistant = { tokens = 5, calls = [{ tool = \"Agent\" }] }\n",
    ));
    assert!(
        e.message
            .contains("uses tool `Agent`, which is not offered"),
        "{}",
        e.message
    );
    assert_eq!(e.hint.as_deref(), Some("add `Agent` to agent e's `tools`"));
    let e = err(&agent("tools = [\"Read\"]\ntool = \"Task\"", one));
    assert_eq!(
        e.message,
        "the launching tool `Task` is not offered to the main stream"
    );
    let e = err(&agent(
        "tools = [\"Read\"]",
        "[[steps.agents.steps]]\nwait = \"5s\"\n",
    ));
    assert_eq!(
        e.message,
        "the agent makes no request (no `assistant` step)"
    );
    let twice = format!(
        "{}{}",
        agent("tools = [\"Read\"]", one),
        agent("tools = [\"Read\"]", one)
    );
    let e = err(&twice);
    assert!(e.message.contains("unique"), "{}", e.message);
}

#[test]
fn the_cli_exits_2_with_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, format!("{HEAD}[[steps]]\nremove_tool = \"Nope\"\n")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml: step 1 (line 14): remove_tool `Nope`: no such tool is offered"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: check the name"), "{stderr}");
}

#[test]
fn the_schema_lists_every_step_kind() {
    let schema = plancache::scenario::files::scenario_schema();
    let v: serde_json::Value = serde_json::from_str(&schema).unwrap();
    let steps = v["$defs"]["Step"].to_string();
    for key in [
        "user",
        "assistant",
        "approve",
        "decline",
        "reject",
        "edit",
        "lead",
        "mode",
        "wait",
        "agents",
        "compact",
        "edit_context",
        "add_tool",
        "remove_tool",
    ] {
        assert!(steps.contains(&format!("\"{key}\"")), "{key} missing");
    }
    assert_eq!(v["additionalProperties"], serde_json::Value::Bool(false));
}

#[test]
fn a_reminder_outside_a_user_step_is_refused() {
    // `reminder = true` on the system prompt: refused, naming the block.
    let text = HEAD.replace(
        "system = { tokens = 100 }",
        "system = { tokens = 100, reminder = true }",
    );
    let e = load_str(
        &format!("{text}[[steps]]\nuser = \"hi\"\n"),
        Path::new("bad.toml"),
    )
    .expect_err("must be rejected");
    assert_eq!(e.place.as_deref(), Some("system[0]"));
    assert!(e.message.contains("reminder = true"), "{}", e.message);
    // In a user step it loads.
    let ok = format!(
        "{HEAD}[[steps]]\nuser = {{ tokens = 20 }}\n[[steps]]\nuser = {{ tokens = 30, reminder = true }}\n[[steps]]\nassistant = {{ tokens = 5 }}\n"
    );
    load_str(&ok, Path::new("ok.toml")).expect("a reminder in a user step loads");
}
