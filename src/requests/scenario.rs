//! A scenario per stream of a rebuilt log, so `plancache run` can replay the logged session
//! under other designs (strategies, cache models, TTLs).
//!
//! Mapping: the first request's tools and system blocks become `[[tools]]` and `system` with
//! their fitted token sizes and their `cache_control` marks; each request is an `assistant`
//! step whose reply is what the next request of the stream appends as assistant blocks; the
//! user blocks appended between two requests are a `user` step; the log's gaps are `wait`
//! steps (typing, tool and human times are zero, decoding is instant, so the clock is the
//! log's). A changed tool list becomes `add_tool` / `remove_tool` / `replace_tool` /
//! `reorder_tools` steps, a changed system block an `edit_system` step, an edited history a
//! `compact` with `keep_tokens` (the messages kept) and no request of its own.
//!
//! What the format does not carry: marks on message blocks move from request to request,
//! which no scenario field says; run the scenario with `--cache anthropic-auto` (a mark on
//! the last block, as most harnesses place it) or `anthropic` (Claude Code's layout). The
//! exact per-block replay is `plancache explain`'s.

use std::time::Duration;

use super::build::{BuiltLog, BuiltRequest};
use crate::prompt::{Level, Role, Ttl};
use crate::scenario::{
    Blocks, Compact, Content, Deferral, Reminders, Scenario, Step, SystemEdit, TextOrContent,
    Timing, ToolDef, Turn, WaitDuration,
};

/// A stream as a scenario, with notes on what it could not carry.
#[derive(Debug, Clone)]
pub struct StreamScenario {
    /// The stream's name (`main`, `stream-2`).
    pub stream: String,
    /// The stream's requests as a scenario.
    pub scenario: Scenario,
    /// Things the scenario approximates (written as comments).
    pub notes: Vec<String>,
}

impl StreamScenario {
    /// The TOML text, with a header naming the source and the notes.
    pub fn to_toml(&self, source: &str) -> Result<String, toml::ser::Error> {
        let body = toml::to_string(&self.scenario)?;
        let mut head = format!(
            "# Imported by `plancache import requests` from {} (stream {}).\n# Token sizes: o200k counts of the real bodies, scaled to the billed usage.\n",
            source.replace('\n', " "),
            self.stream
        );
        for n in &self.notes {
            head.push_str(&format!("# note: {}\n", n.replace('\n', " ")));
        }
        Ok(head + &body)
    }
}

/// (label, tokens, mark, name) of each segment at `level`.
fn at_level(r: &BuiltRequest, level: Level) -> Vec<(u32, Option<Ttl>, String, u64)> {
    let names: Vec<String> = r
        .body
        .iter()
        .flat_map(|b| b.pieces.iter())
        .filter(|p| p.level == level)
        .map(|p| p.name.clone().unwrap_or_default())
        .collect();
    r.request
        .segments
        .iter()
        .filter(|s| s.level == level)
        .zip(names.into_iter().chain(std::iter::repeat(String::new())))
        .map(|(s, n)| (s.len() as u32, s.breakpoint, n, s.id))
        .collect()
}

fn tool_steps(prev: &BuiltRequest, cur: &BuiltRequest, steps: &mut Vec<Step>) {
    let (a, b) = (at_level(prev, Level::Tools), at_level(cur, Level::Tools));
    let def = |t: &(u32, Option<Ttl>, String, u64)| ToolDef {
        name: t.2.clone(),
        access: None,
        tokens: Some(t.0),
        description: None,
        schema: None,
        deferred: false,
        cache_control: t.1,
    };
    for t in a.iter().filter(|t| !b.iter().any(|u| u.2 == t.2)) {
        steps.push(Step::RemoveTool(t.2.clone()));
    }
    for t in &b {
        match a.iter().find(|u| u.2 == t.2) {
            None => steps.push(Step::AddTool(def(t))),
            Some(u) if u.3 != t.3 => steps.push(Step::ReplaceTool(def(t))),
            Some(_) => {}
        }
    }
    let kept: Vec<String> = a
        .iter()
        .filter(|t| b.iter().any(|u| u.2 == t.2))
        .map(|t| t.2.clone())
        .collect();
    let kept: Vec<String> = kept
        .into_iter()
        .chain(
            b.iter()
                .filter(|t| !a.iter().any(|u| u.2 == t.2))
                .map(|t| t.2.clone()),
        )
        .collect();
    let order: Vec<String> = b.iter().map(|t| t.2.clone()).collect();
    if kept != order {
        steps.push(Step::ReorderTools(order));
    }
}

fn system_steps(
    prev: &BuiltRequest,
    cur: &BuiltRequest,
    steps: &mut Vec<Step>,
    notes: &mut Vec<String>,
) {
    let (a, b) = (at_level(prev, Level::System), at_level(cur, Level::System));
    if a.len() != b.len() {
        notes.push(format!(
            "{}: the system prompt has {} blocks instead of {}; kept as it was",
            cur.place,
            b.len(),
            a.len()
        ));
        return;
    }
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        if x.3 != y.3 {
            steps.push(Step::EditSystem(SystemEdit {
                block: k + 1,
                tokens: Some(y.0),
                cache_control: y.1,
                ..SystemEdit::default()
            }));
        }
    }
}

/// Message segments of a request: (id, tokens, role).
fn messages(r: &BuiltRequest) -> Vec<(u64, u32, Option<Role>)> {
    r.request
        .segments
        .iter()
        .filter(|s| s.level == Level::Messages && s.label != super::build::TRAILER)
        .map(|s| {
            let role = match s.kind {
                crate::prompt::SegmentKind::Message(r) => Some(r),
                crate::prompt::SegmentKind::Reminder => Some(Role::User),
                _ => None,
            };
            (s.id, s.len() as u32, role)
        })
        .collect()
}

/// The steps between two requests of a stream; returns the reply size of the previous one.
fn between(
    prev: Option<&BuiltRequest>,
    cur: &BuiltRequest,
    steps: &mut Vec<Step>,
    notes: &mut Vec<String>,
) -> u32 {
    let old = prev.map(messages).unwrap_or_default();
    let new = messages(cur);
    let common = old.iter().zip(&new).take_while(|(x, y)| x.0 == y.0).count();
    if let Some(p) = prev {
        tool_steps(p, cur, steps);
        system_steps(p, cur, steps, notes);
        let gap = cur.request.sent_at_ms.saturating_sub(p.request.sent_at_ms);
        if gap > 0 {
            steps.push(Step::Wait(WaitDuration::new(Duration::from_millis(gap))));
        }
    }
    let mut reply = 0u32;
    let mut rest = &new[common..];
    if common < old.len() {
        // History edited: keep the unchanged messages, the rest arrives as a "summary".
        let keep: u32 = new[..common].iter().map(|m| m.1).sum();
        let summary: u32 = rest.iter().map(|m| m.1).sum();
        steps.push(Step::Compact(Compact {
            summary_tokens: Some(summary.max(1)),
            keep_tokens: Some(keep),
            request: false,
            ..Compact::default()
        }));
        notes.push(format!(
            "{}: earlier messages changed; written as a compaction that keeps {keep} tokens",
            cur.place
        ));
        return 0;
    }
    while let Some((_, n, Some(Role::Assistant))) = rest.first() {
        reply += n;
        rest = &rest[1..];
    }
    let user: u32 = rest.iter().map(|m| m.1).sum();
    if user > 0 || prev.is_none() {
        steps.push(Step::User(TextOrContent::Content(Content::tokens(
            user.max(1),
        ))));
    }
    reply
}

/// Sets the previous assistant step's reply size.
fn set_reply(steps: &mut [Step], reply: u32) {
    if let Some(Step::Assistant(t)) = steps
        .iter_mut()
        .rev()
        .find(|s| matches!(s, Step::Assistant(_)))
    {
        t.tokens = Some(reply.max(1));
    }
}

fn base(name: &str, first: &BuiltRequest) -> Scenario {
    let tools = at_level(first, Level::Tools)
        .into_iter()
        .map(|t| ToolDef {
            name: t.2,
            access: None,
            tokens: Some(t.0),
            description: None,
            schema: None,
            deferred: false,
            cache_control: t.1,
        })
        .collect();
    let system: Vec<Content> = at_level(first, Level::System)
        .into_iter()
        .map(|s| Content {
            tokens: Some(s.0),
            cache_control: s.1,
            ..Content::default()
        })
        .collect();
    Scenario {
        name: name.to_string(),
        description: "imported from a raw API request log".into(),
        model: first.request.model.clone(),
        plan_model: None,
        tokenizer: Default::default(),
        seed: 0,
        initial_mode: Default::default(),
        auto_available: true,
        external_channels: false,
        plans_dir: "plans".into(),
        system: if system.is_empty() {
            Blocks::One(Content::tokens(1))
        } else {
            Blocks::Many(system)
        },
        plan_system: None,
        tools,
        reminders: Reminders::default(),
        team: None,
        timing: Timing::recorded(),
        context: Vec::new(),
        deferred_tools: Deferral::default(),
        ttl: None,
        keepalive_max_tokens: 1,
        steps: Vec::new(),
    }
}

/// One scenario per stream of the log (server-side passes left out: a scenario cannot say
/// that the server compacted on its own).
pub fn scenarios(log: &BuiltLog, name: &str) -> Vec<StreamScenario> {
    let mut out = Vec::new();
    for stream in &log.streams {
        let reqs: Vec<&BuiltRequest> = log
            .requests
            .iter()
            .filter(|r| &r.request.stream == stream && r.body.is_some())
            .collect();
        let Some(first) = reqs.first() else { continue };
        let sname = if stream == "main" {
            name.to_string()
        } else {
            format!("{name}.{stream}")
        };
        let mut sc = base(&sname, first);
        let mut notes = Vec::new();
        if log
            .requests
            .iter()
            .any(|r| &r.request.stream == stream && r.server_compaction)
        {
            notes.push("the server compacted the context on its own (usage.iterations); those passes are not in the scenario".into());
        }
        let mut prev: Option<&BuiltRequest> = None;
        for r in &reqs {
            let reply = between(prev, r, &mut sc.steps, &mut notes);
            if prev.is_some() {
                set_reply(&mut sc.steps, reply);
            }
            let model = (r.request.model != sc.model).then(|| r.request.model.clone());
            sc.steps.push(Step::Assistant(Turn {
                tokens: Some(
                    r.usage
                        .as_ref()
                        .map_or(1, |u| u.output.clamp(1, u64::from(u32::MAX)) as u32),
                ),
                model,
                ..Turn::default()
            }));
            prev = Some(r);
        }
        out.push(StreamScenario {
            stream: stream.clone(),
            scenario: sc,
            notes,
        });
    }
    out
}
