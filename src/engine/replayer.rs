//! The step loop: the state machine decides each step, the strategy renders it, and assistant
//! steps become requests priced against the cache.

use std::sync::Arc;

use super::edits;
use super::price::{price, REPLY};
use super::stream::{AgentStream, Stream};
use super::{Replay, ReplayEnv, ReplayError};
use crate::cache::CacheModel;
use crate::plan_mode::{
    CallDecision, CallRequest, MachineConfig, Mode, PlanDoc, PlanError, PlanMachine, Trace,
    TraceEntry, Transition,
};
use crate::prompt::{Level, Request, RequestSettings, Role, Segment, TokenSource};
use crate::scenario::{AgentSpec, Content, Session, Step, Target, Turn};
use crate::strategy::Strategy;

/// `kind` of a keep-alive ping.
const KEEPALIVE: &str = "keepalive";
/// `kind` of a compaction's summarisation request.
const COMPACTION: &str = "compaction";

/// Milliseconds of a duration; `u64::MAX` when it has more (the clock then refuses to advance).
fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn content_source(c: &Content) -> Option<TokenSource> {
    c.tokens
        .map(TokenSource::Count)
        .or_else(|| c.text.clone().map(TokenSource::Text))
}

/// Where a step sits, for errors, labels and the trace.
#[derive(Clone)]
pub(super) struct At {
    /// Main-stream step index (0-based).
    step: usize,
    /// `file: step 7 (line 42)`, plus `, agent X step k` inside a subagent.
    pub(super) place: String,
    /// Unique label prefix for segments made at this step (`step7` or `step7:explore-1:2`).
    label: String,
}

/// One replay in progress: the machine, the strategy, the cache model and the output so far.
struct Replayer<'a> {
    session: &'a Session,
    strategy: &'a dyn Strategy,
    cache: &'a mut dyn CacheModel,
    env: &'a ReplayEnv,
    machine: PlanMachine,
    out: Replay,
}

fn scenario_err(at: &At, e: crate::scenario::ScenarioError) -> ReplayError {
    ReplayError {
        place: at.place.clone(),
        message: e.message,
        hint: e.hint.unwrap_or_default(),
    }
}

fn plan_err(at: &At, e: PlanError) -> ReplayError {
    ReplayError {
        place: at.place.clone(),
        message: e.message,
        hint: e.hint,
    }
}

fn record(
    trace: &mut Trace,
    at: &At,
    stream: &str,
    event: String,
    decision: String,
    before: Mode,
    after: Mode,
) {
    trace.push(TraceEntry {
        step: at.step + 1,
        stream: stream.to_string(),
        event,
        decision,
        mode_before: before,
        mode_after: after,
    });
}

/// Replays one scenario under one strategy against one cache model.
pub fn replay(
    session: &Session,
    strategy: &dyn Strategy,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
) -> Result<Replay, ReplayError> {
    let sc = &session.scenario;
    let file = session.path.display().to_string();
    let machine = PlanMachine::new(MachineConfig {
        initial_mode: sc.initial_mode,
        auto_available: sc.auto_available,
        external_channels: sc.external_channels,
        plan_mode_required: sc.team.as_ref().is_some_and(|t| t.plan_mode_required),
    });
    let out = Replay {
        scenario: sc.name.clone(),
        strategy: strategy.name().to_string(),
        cache: cache.name().to_string(),
        rows: Vec::new(),
        trace: Trace::default(),
        unrendered_calls: Vec::new(),
        notes: Vec::new(),
    };
    let mut r = Replayer {
        session,
        strategy,
        cache,
        env,
        machine,
        out,
    };
    let mut main = Stream::new("main", session.tools.clone(), 0);
    main.context = session.context.clone();
    main.conversation = main.context_segments();
    for (i, step) in sc.steps.iter().enumerate() {
        let at = At {
            step: i,
            place: format!("{file}: {}", session.step_place(i)),
            label: format!("step{}", i + 1),
        };
        let mut trace = Trace::default();
        r.main_step(&at, step, &mut main, &mut trace)?;
        r.out.trace.entries.extend(trace.entries);
    }
    if let Some(target) = r.machine.awaiting() {
        let what = match target {
            Target::Enter => "EnterPlanMode",
            Target::Exit => "ExitPlanMode",
        };
        return Err(ReplayError {
            place: format!("{file}: end of steps"),
            message: format!("the session ends while {what} awaits an answer"),
            hint: "add an approve/decline/reject step after the call, or remove the call".into(),
        });
    }
    Ok(r.out)
}

impl Replayer<'_> {
    /// One step of the main stream; decisions go to `trace`.
    fn main_step(
        &mut self,
        at: &At,
        step: &Step,
        main: &mut Stream,
        trace: &mut Trace,
    ) -> Result<(), ReplayError> {
        let session = self.session;
        let sc = &session.scenario;
        let human = ms(sc.timing.human);
        let before = self.machine.mode();
        match step {
            Step::User(c) => {
                self.machine
                    .ensure_idle("a user message")
                    .map_err(|e| plan_err(at, e))?;
                main.advance(ms(sc.timing.typing), &at.place)?;
                let seg = session
                    .message_content(
                        Role::User,
                        &format!("{}:user", at.label),
                        &c.clone().into_content(),
                    )
                    .map_err(|e| scenario_err(at, e))?;
                main.conversation.push(seg);
            }
            Step::Wait(d) => {
                let end = super::stream::advance(main.clock_ms, ms(d.0), &at.place)?;
                if let Some(every) = d.keepalive() {
                    self.keepalive(at, main, end, ms(every))?;
                }
                main.clock_ms = end;
                record(
                    trace,
                    at,
                    &main.name,
                    format!("wait {}", humantime::format_duration(d.0)),
                    match d.keepalive() {
                        Some(k) => format!("keepalive every {}", humantime::format_duration(k)),
                        None => "-".into(),
                    },
                    before,
                    before,
                );
            }
            Step::Mode(to) => {
                let t = self.machine.set_mode(*to).map_err(|e| plan_err(at, e))?;
                record(
                    trace,
                    at,
                    &main.name,
                    format!("mode {to}"),
                    describe(&t),
                    before,
                    t.to,
                );
                main.conversation
                    .extend(self.strategy.announce(session, &t));
            }
            Step::Assistant(turn) => self.assistant(at, turn, main, trace)?,
            Step::Approve(a) => {
                let t = self
                    .machine
                    .approve(a.target)
                    .map_err(|e| plan_err(at, e))?;
                main.advance(human, &at.place)?;
                let clear = a.clear_context && t.plan_approved.is_some();
                record(
                    trace,
                    at,
                    &main.name,
                    format!("approve {}", target_str(a.target)),
                    match clear {
                        true => format!("{}; context cleared", describe(&t)),
                        false => describe(&t),
                    },
                    before,
                    t.to,
                );
                self.apply_answer(main, at, &t, None, clear);
            }
            Step::Decline(target) => {
                let t = self.machine.decline(*target).map_err(|e| plan_err(at, e))?;
                main.advance(human, &at.place)?;
                record(
                    trace,
                    at,
                    &main.name,
                    format!("decline {}", target_str(*target)),
                    describe(&t),
                    before,
                    t.to,
                );
                main.conversation
                    .push(session.enter_declined_result.clone());
            }
            Step::Reject(feedback) => {
                let t = self.machine.reject().map_err(|e| plan_err(at, e))?;
                main.advance(human, &at.place)?;
                record(
                    trace,
                    at,
                    &main.name,
                    "reject exit".into(),
                    describe(&t),
                    before,
                    t.to,
                );
                self.apply_answer(main, at, &t, Some(&feedback.clone().into_content()), false);
            }
            Step::Edit(p) => {
                let plan = match (&p.plan_tokens, &p.plan) {
                    (Some(n), _) => PlanDoc {
                        tokens: *n,
                        text: None,
                    },
                    (None, Some(t)) => PlanDoc {
                        tokens: session.tokenizer.count_text(t) as u32,
                        text: Some(t.clone()),
                    },
                    (None, None) => {
                        return Err(ReplayError {
                            place: at.place.clone(),
                            message: "an edit needs exactly one of `plan_tokens` or `plan`".into(),
                            hint: "e.g. edit = { plan_tokens = 720 }".into(),
                        })
                    }
                };
                let t = self.machine.edit(plan).map_err(|e| plan_err(at, e))?;
                main.advance(human, &at.place)?;
                record(
                    trace,
                    at,
                    &main.name,
                    "edit plan, approve exit".into(),
                    describe(&t),
                    before,
                    t.to,
                );
                self.apply_answer(main, at, &t, None, false);
            }
            Step::Lead(resp) => {
                let (t, request_id) = self
                    .machine
                    .lead_response(resp.approve)
                    .map_err(|e| plan_err(at, e))?;
                main.advance(human, &at.place)?;
                let verb = if resp.approve { "approve" } else { "reject" };
                record(
                    trace,
                    at,
                    &main.name,
                    format!("lead {verb} {request_id}"),
                    describe(&t),
                    before,
                    t.to,
                );
                let feedback = resp.feedback.clone().map(|f| Content {
                    text: Some(f),
                    ..Content::default()
                });
                self.apply_answer(main, at, &t, feedback.as_ref(), false);
            }
            Step::Agents(agents) => self.agents(at, agents, main, trace)?,
            Step::Compact(c) => {
                self.machine
                    .ensure_idle("a compaction")
                    .map_err(|e| plan_err(at, e))?;
                let source = c
                    .summary_tokens
                    .map(TokenSource::Count)
                    .or_else(|| c.summary.clone().map(TokenSource::Text))
                    .unwrap_or(TokenSource::Count(0));
                let summary =
                    session.message(Role::User, &format!("{}:compact-summary", at.label), source);
                let size = summary.len();
                if c.request {
                    self.compaction_request(at, main, c.instruction_tokens, c.tools, &summary)?;
                }
                match c.keep_tokens {
                    // Cleared in place: whole messages within `keep` tokens stay.
                    Some(keep) => {
                        let mut kept = 0u64;
                        let n = main
                            .conversation
                            .iter()
                            .take_while(|seg| {
                                kept += seg.len() as u64;
                                kept <= keep as u64
                            })
                            .count();
                        main.conversation.truncate(n);
                        main.touched(n);
                    }
                    None => {
                        main.conversation = main.context_segments();
                        main.touched(0);
                        main.loaded.clear();
                    }
                }
                main.conversation.push(summary);
                record(
                    trace,
                    at,
                    &main.name,
                    "compact".into(),
                    format!("conversation restarts from a {size}-token summary"),
                    before,
                    before,
                );
            }
            Step::EditContext(block) => {
                let seg = session
                    .context_block(block, at.step)
                    .map_err(|e| scenario_err(at, e))?;
                let size = seg.len();
                match main.context.iter_mut().find(|(n, _)| *n == block.name) {
                    Some((_, old)) => {
                        if let Some(pos) =
                            main.conversation.iter().position(|s| Arc::ptr_eq(s, old))
                        {
                            main.conversation[pos] = seg.clone();
                            main.dirty_from = main.dirty_from.min(pos);
                        }
                        *old = seg;
                    }
                    None => {
                        return Err(ReplayError {
                            place: at.place.clone(),
                            message: format!("no context block named `{}`", block.name),
                            hint: "declare it in the scenario's `context` list".into(),
                        })
                    }
                }
                record(
                    trace,
                    at,
                    &main.name,
                    format!("edit context {}", block.name),
                    format!("block replaced ({size} tokens)"),
                    before,
                    before,
                );
            }
            Step::AddTool(def) => {
                let tool = session.build_tool(def).map_err(|e| scenario_err(at, e))?;
                main.conversation
                    .extend(self.strategy.tool_added(session, &tool, at.step));
                main.tools.push(tool);
                record(
                    trace,
                    at,
                    &main.name,
                    format!("add tool {}", def.name),
                    "tool offered from now on".into(),
                    before,
                    before,
                );
            }
            Step::RemoveTool(name) => {
                main.tools.retain(|t| t.name != *name);
                main.loaded.remove(name);
                record(
                    trace,
                    at,
                    &main.name,
                    format!("remove tool {name}"),
                    "tool withdrawn".into(),
                    before,
                    before,
                );
            }
            Step::EditSystem(edit) => {
                let inline = self.strategy.system_edit_inline();
                let decision = edits::edit_system(session, main, edit, at.step, inline)
                    .map_err(|e| e.at(&at.place))?;
                record(
                    trace,
                    at,
                    &main.name,
                    format!("edit system #{}", edit.block),
                    decision,
                    before,
                    before,
                );
            }
            Step::ReorderTools(names) => {
                edits::reorder_tools(main, names).map_err(|e| e.at(&at.place))?;
                record(
                    trace,
                    at,
                    &main.name,
                    format!("reorder tools {}", names.join(", ")),
                    "tools reordered".into(),
                    before,
                    before,
                );
            }
            Step::ReplaceTool(def) => {
                let size = edits::replace_tool(session, main, def, at.step)
                    .map_err(|e| e.at(&at.place))?;
                if let Some(tool) = main.tools.iter().find(|t| t.name == def.name) {
                    let added = self.strategy.tool_replaced(session, tool, at.step);
                    main.conversation.extend(added);
                }
                record(
                    trace,
                    at,
                    &main.name,
                    format!("replace tool {}", def.name),
                    format!("definition re-rendered ({size} tokens)"),
                    before,
                    before,
                );
            }
        }
        Ok(())
    }

    /// The tools and system blocks of `stream`'s next request in `mode` (system edits in force
    /// applied), and the model that serves it.
    fn head(&self, stream: &Stream, mode: Mode) -> (Vec<Arc<Segment>>, String) {
        let session = self.session;
        let mut segments =
            self.strategy
                .tools_for(session, &stream.initial_tools, &stream.tools, mode);
        let strategy_model = self.strategy.model(session, mode);
        let model = match &stream.agent {
            Some(agent) => {
                segments.extend(agent.system.iter().cloned());
                agent.model.clone().unwrap_or(strategy_model)
            }
            None => {
                segments.extend(
                    self.strategy
                        .system(session, mode)
                        .iter()
                        .map(|s| stream.system_block(s)),
                );
                strategy_model
            }
        };
        (segments, model)
    }

    /// The settings of a request of `stream`: the TTL class the scenario's `ttl` asks for there.
    fn settings(&self, stream: &str) -> RequestSettings {
        RequestSettings {
            cache_ttl: self.session.scenario.ttl.and_then(|t| t.for_stream(stream)),
            ..RequestSettings::default()
        }
    }

    /// Prices `request`, records its row as `kind`, and keeps its segments for the stream's next
    /// request.
    fn send(
        &mut self,
        request: Request,
        stream: &mut Stream,
        mode: Mode,
        kind: &str,
    ) -> Result<(), ReplayError> {
        let mut row = price(
            &request,
            &mut *self.cache,
            self.env,
            stream,
            mode,
            &self.out,
            self.session,
        )?;
        row.kind = kind.to_string();
        self.out.rows.push(row);
        // A compaction's prompt is not the conversation's: nothing of the restarted
        // conversation is sent yet, so there is nothing for pings to re-send until its first
        // request.
        stream.sent_model = (kind != COMPACTION).then_some(request.model);
        stream.last_sent_at_ms = request.sent_at_ms;
        stream.keep_sent(request.segments);
        Ok(())
    }

    /// Keep-alive pings during a wait of `stream` that ends at `end_ms`: whenever `every_ms`
    /// has passed since the stream's last request or ping was sent (at the wait's start if
    /// that moment has already passed), the harness re-sends the stream's last request
    /// unchanged (same segments, same model) with `max_tokens` = the scenario's
    /// `keepalive_max_tokens` (1, or 0 for a pre-warm that generates nothing). Each ping is a
    /// priced request of kind `keepalive` (that many output tokens); its reply is discarded, and the human's
    /// clock is not moved. A stream that has sent nothing since it started or was compacted has
    /// nothing to keep warm.
    fn keepalive(
        &mut self,
        at: &At,
        stream: &mut Stream,
        end_ms: u64,
        every_ms: u64,
    ) -> Result<(), ReplayError> {
        let Some(model) = stream.sent_model.clone() else {
            return Ok(());
        };
        let every_ms = every_ms.max(1);
        let resume_at = stream.clock_ms;
        let mut due = stream
            .last_sent_at_ms
            .saturating_add(every_ms)
            .max(stream.clock_ms);
        while due < end_ms {
            let request = Request {
                index: self.out.rows.len(),
                stream: stream.name.clone(),
                step: at.step,
                model: model.clone(),
                sent_at_ms: due,
                segments: stream.take_sent(),
                settings: self.settings(&stream.name),
                reply: Vec::new(),
                output_tokens: u64::from(self.session.scenario.keepalive_max_tokens),
            };
            let mode = self.machine.mode();
            self.send(request, stream, mode, KEEPALIVE)?;
            due = due.saturating_add(every_ms);
        }
        stream.clock_ms = resume_at;
        Ok(())
    }

    /// The summarisation request of a `compact` step: the conversation so far (tools and
    /// system as the strategy renders them, unless `with_tools` is false) followed by the
    /// summary instruction; its output is `summary`.
    fn compaction_request(
        &mut self,
        at: &At,
        main: &mut Stream,
        instruction_tokens: u32,
        with_tools: bool,
        summary: &Arc<Segment>,
    ) -> Result<(), ReplayError> {
        let mode = self.machine.mode();
        let (mut head, model) = self.head(main, mode);
        if !with_tools {
            head.retain(|s| s.level != Level::Tools);
        }
        // The same instruction every time (one content), as a harness sends it.
        main.conversation.push(self.session.message(
            Role::User,
            "compact-instruction",
            TokenSource::Count(instruction_tokens),
        ));
        let segments = main.request_segments(head);
        let request = Request {
            index: self.out.rows.len(),
            stream: main.name.clone(),
            step: at.step,
            model,
            sent_at_ms: main.clock_ms,
            segments,
            settings: self.settings(&main.name),
            reply: vec![summary.clone()],
            output_tokens: summary.len() as u64,
        };
        self.send(request, main, mode, COMPACTION)
    }

    /// One assistant reply of `stream`: one request, then its tool calls decided in order.
    fn assistant(
        &mut self,
        at: &At,
        turn: &Turn,
        stream: &mut Stream,
        trace: &mut Trace,
    ) -> Result<(), ReplayError> {
        let session = self.session;
        let strategy = self.strategy;
        let sc = &session.scenario;
        self.machine
            .ensure_idle("an assistant reply")
            .map_err(|e| plan_err(at, e))?;
        let mode = self.machine.mode();
        // Tools loaded on demand: the reference precedes the request whose reply calls the tool.
        for call in &turn.calls {
            if let Some(tool) = stream.tools.iter().find(|t| t.name == call.tool) {
                if strategy.loads_on_demand(session, tool)
                    && stream.loaded.insert(tool.name.clone())
                {
                    stream.conversation.push(session.tool_reference(tool));
                }
            }
        }
        let reply_source = turn
            .tokens
            .map(TokenSource::Count)
            .or_else(|| turn.text.clone().map(TokenSource::Text))
            .unwrap_or(TokenSource::Count(0));
        let reply = session.message(
            Role::Assistant,
            &format!("{}:assistant", at.label),
            reply_source,
        );
        let (segments, model) = self.head(stream, mode);
        let model = match &turn.model {
            Some(m) => {
                self.out.notes.push(format!(
                    "{}: request served by {m} (scenario override; the strategy would use {model})",
                    at.place
                ));
                m.clone()
            }
            None => model,
        };
        let segments = stream.request_segments(segments);
        // An unlogged request ends with a message of its own (the away summary's instruction,
        // a retried attempt's tail), `tokens` long, that joins no conversation: its entry is
        // never read again, while the prefix it shares is read and refreshed.
        let kept = turn.unlogged.then(|| segments.clone());
        let mut segments = segments;
        if turn.unlogged && !reply.is_empty() {
            segments.push(session.message(
                Role::User,
                &format!("{}:unlogged", at.label),
                TokenSource::Count(reply.len() as u32),
            ));
        }
        let request = Request {
            index: self.out.rows.len(),
            stream: stream.name.clone(),
            step: at.step,
            model,
            sent_at_ms: stream.clock_ms,
            segments,
            settings: self.settings(&stream.name),
            reply: vec![reply.clone()],
            output_tokens: reply.len() as u64 + turn.reasoning_tokens as u64,
        };
        if let Some(kept) = kept {
            price(
                &request,
                &mut *self.cache,
                self.env,
                stream,
                mode,
                &self.out,
                session,
            )?;
            // Sent and cached, but neither logged nor part of the conversation.
            stream.last_sent_at_ms = request.sent_at_ms;
            stream.keep_sent(kept);
            return Ok(());
        }
        self.send(request, stream, mode, REPLY)?;
        stream.conversation.push(reply);
        for (j, call) in turn.calls.iter().enumerate() {
            let tool = stream
                .tools
                .iter()
                .find(|t| t.name == call.tool)
                .cloned()
                .ok_or_else(|| ReplayError {
                    place: at.place.clone(),
                    message: format!("call {} uses tool `{}`, which is not offered here", j + 1, call.tool),
                    hint: "add it to [[tools]] (or the agent's `tools`), or add it with an add_tool step first".into(),
                })?;
            let plan = if stream.agent.is_some() {
                // A subagent's plan file is its own; it does not become the session's plan.
                None
            } else {
                call.plan_tokens
                    .map(|n| PlanDoc {
                        tokens: n,
                        text: None,
                    })
                    .or_else(|| {
                        call.plan.as_ref().map(|t| PlanDoc {
                            tokens: session.tokenizer.count_text(t) as u32,
                            text: Some(t.clone()),
                        })
                    })
            };
            let by_path = call.path.as_deref().is_some_and(|p| {
                let p = std::path::Path::new(p);
                match &stream.agent {
                    None => session.plan_files.is_plan_file(p),
                    Some(_) => p == session.plan_files.agent_plan_path(&stream.name),
                }
            });
            let decision = self
                .machine
                .call(&CallRequest {
                    tool: &call.tool,
                    access: tool.access,
                    command: call.command.as_deref(),
                    plan_file: call.plan_file || by_path,
                    plan,
                    allowed_prompts: &call.allowed_prompts,
                })
                .map_err(|e| plan_err(at, e))?;
            let event = match (&call.command, &call.path) {
                (Some(c), _) => format!("call {} `{c}`", call.tool),
                (None, Some(p)) => format!("call {} {p}", call.tool),
                (None, None) => format!("call {}", call.tool),
            };
            record(
                trace,
                at,
                &stream.name,
                event,
                decision.to_string(),
                mode,
                self.machine.mode(),
            );
            let label = format!("{}:result{}:{}", at.label, j + 1, call.tool);
            match decision {
                CallDecision::Allow(_) | CallDecision::Ask => {
                    if decision == CallDecision::Ask {
                        stream.advance(ms(sc.timing.human), &at.place)?;
                    }
                    stream.advance(
                        call.duration.map(ms).unwrap_or(ms(sc.timing.tool)),
                        &at.place,
                    )?;
                    let source = call
                        .result_tokens
                        .map(TokenSource::Count)
                        .or_else(|| call.result.clone().map(TokenSource::Text))
                        .unwrap_or(TokenSource::Count(0));
                    stream
                        .conversation
                        .push(session.message(Role::User, &label, source));
                }
                CallDecision::Deny(_) => {
                    if strategy.renders_denied_calls() {
                        stream.conversation.push(session.denied_result.clone());
                    } else {
                        self.out.unrendered_calls.push(format!(
                            "{}: call {} {} cannot be made under {} ({}); no denied round trip",
                            at.place,
                            j + 1,
                            call.tool,
                            strategy.name(),
                            strategy.unrendered_rule()
                        ));
                    }
                }
                CallDecision::AwaitApproval(_) => {}
            }
        }
        Ok(())
    }

    /// Launches subagents in parallel: each is its own stream starting now; their requests are
    /// priced in send-time order; the main stream resumes when the last one finishes and
    /// receives each agent's result (in launch order) as a tool result.
    fn agents(
        &mut self,
        at: &At,
        agents: &[AgentSpec],
        main: &mut Stream,
        trace: &mut Trace,
    ) -> Result<(), ReplayError> {
        let session = self.session;
        let before = self.machine.mode();
        let mut streams = Vec::with_capacity(agents.len());
        for a in agents {
            let launcher = main
                .tools
                .iter()
                .find(|t| t.name == a.tool)
                .cloned()
                .ok_or_else(|| ReplayError {
                    place: at.place.clone(),
                    message: format!("agent `{}`: tool `{}` is not offered", a.name, a.tool),
                    hint: "add a [[tools]] entry named Agent (access = \"read\")".into(),
                })?;
            let decision = self
                .machine
                .call(&CallRequest {
                    tool: &a.tool,
                    access: launcher.access,
                    command: None,
                    plan_file: false,
                    plan: None,
                    allowed_prompts: &[],
                })
                .map_err(|e| plan_err(at, e))?;
            record(
                trace,
                at,
                &main.name,
                format!("call {} ({})", a.tool, a.name),
                decision.to_string(),
                before,
                self.machine.mode(),
            );
            if !decision.executes() {
                return Err(ReplayError {
                    place: at.place.clone(),
                    message: format!("agent `{}` cannot be launched: {decision}", a.name),
                    hint: "the launching tool must be allowed here; mark it access = \"read\""
                        .into(),
                });
            }
            let tools = a
                .tools
                .iter()
                .map(|n| {
                    main.tools
                        .iter()
                        .find(|t| t.name == *n)
                        .cloned()
                        .ok_or_else(|| ReplayError {
                            place: at.place.clone(),
                            message: format!("agent `{}`: tool `{n}` is not offered", a.name),
                            hint: "subagents get tools from the session's [[tools]] list".into(),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut stream = Stream::new(&a.name, tools, main.clock_ms);
            let mut system = session
                .system_blocks(
                    &a.system.to_vec(),
                    &match &a.agent_type {
                        Some(t) => format!("agent-type:{t}:system"),
                        None => format!("agent:{}:system", a.name),
                    },
                )
                .map_err(|e| scenario_err(at, e))?;
            if let Some(env) = &a.environment {
                system.push(
                    session
                        .environment_block(&format!("{}:{}", at.label, a.name), env)
                        .map_err(|e| scenario_err(at, e))?,
                );
            }
            stream.agent = Some(AgentStream {
                system,
                model: a.model.clone(),
            });
            let prompt = session
                .message_content(
                    Role::User,
                    &format!("{}:{}:prompt", at.label, a.name),
                    &a.prompt.clone().into_content(),
                )
                .map_err(|e| scenario_err(at, e))?;
            stream.conversation.push(prompt);
            streams.push((stream, 0usize, Trace::default(), 0u32));
        }
        // The discrete-event loop: always advance the stream whose clock is earliest (ties by
        // launch order), so requests reach the cache model in send-time order.
        loop {
            let next = streams
                .iter()
                .enumerate()
                .filter(|(k, (_, pos, _, _))| *pos < agents[*k].steps.len())
                .min_by_key(|(k, (s, _, _, _))| (s.clock_ms, *k))
                .map(|(k, _)| k);
            let Some(k) = next else { break };
            let (stream, pos, agent_trace, last_reply) = &mut streams[k];
            let a = &agents[k];
            let inner = At {
                step: at.step,
                place: format!("{}, agent {} step {}", at.place, a.name, *pos + 1),
                label: format!("{}:{}:{}", at.label, a.name, *pos + 1),
            };
            match &a.steps[*pos] {
                Step::User(c) => {
                    let seg = session
                        .message_content(
                            Role::User,
                            &format!("{}:user", inner.label),
                            &c.clone().into_content(),
                        )
                        .map_err(|e| scenario_err(&inner, e))?;
                    stream.conversation.push(seg);
                }
                Step::Wait(d) => {
                    if d.keepalive().is_some() {
                        return Err(ReplayError {
                            place: inner.place.clone(),
                            message: "keepalive pings are modelled on main-stream waits only"
                                .into(),
                            hint: "drop `keepalive` from the subagent's wait".into(),
                        });
                    }
                    stream.advance(ms(d.0), &inner.place)?;
                    record(
                        agent_trace,
                        &inner,
                        &a.name,
                        format!("wait {}", humantime::format_duration(d.0)),
                        "-".into(),
                        before,
                        before,
                    );
                }
                Step::Assistant(turn) => {
                    self.assistant(&inner, turn, stream, agent_trace)?;
                    if let Some(reply) =
                        stream.conversation.iter().rev().find(|s| {
                            s.kind == crate::prompt::SegmentKind::Message(Role::Assistant)
                        })
                    {
                        *last_reply = reply.len() as u32;
                    }
                }
                _ => {
                    return Err(ReplayError {
                        place: inner.place.clone(),
                        message: "a subagent step must be `user`, `assistant` or `wait`".into(),
                        hint: "plan-mode answers and context events belong to the main stream"
                            .into(),
                    })
                }
            }
            *pos += 1;
        }
        main.clock_ms = streams
            .iter()
            .map(|(s, _, _, _)| s.clock_ms)
            .max()
            .unwrap_or(main.clock_ms);
        for (a, (_, _, agent_trace, last_reply)) in agents.iter().zip(streams) {
            trace.entries.extend(agent_trace.entries);
            let tokens = a.result_tokens.unwrap_or(last_reply);
            main.conversation.push(session.message(
                Role::User,
                &format!("{}:result:{}:{}", at.label, a.tool, a.name),
                TokenSource::Count(tokens),
            ));
        }
        Ok(())
    }

    /// Appends the tool result that answers a deferred plan tool, then the strategy's
    /// announcements. With `clear`, an approved plan restarts the conversation from the early
    /// context blocks and the plan under every strategy (Claude Code's "clear context").
    fn apply_answer(
        &mut self,
        stream: &mut Stream,
        at: &At,
        t: &Transition,
        feedback: Option<&Content>,
        clear: bool,
    ) {
        let session = self.session;
        let r = &session.scenario.reminders;
        if t.entered_plan {
            stream
                .conversation
                .push(session.enter_approved_result.clone());
        } else if let Some(plan) = &t.plan_approved {
            let label = format!("{}:result:ExitPlanMode", at.label);
            let source = match &plan.text {
                Some(text) => TokenSource::Text(format!("User approved the plan.\n\n{text}")),
                None => TokenSource::Count(r.plan_approved_header + plan.tokens),
            };
            let approval = session.message(Role::User, &label, source);
            let context = stream.context_segments();
            if clear {
                stream.conversation = context;
                stream.conversation.push(approval);
            } else {
                self.strategy
                    .after_approval(session, &mut stream.conversation, &context, approval);
            }
            // The strategy may rewrite the history (a fresh conversation, say).
            stream.touched(0);
            // A fresh conversation no longer holds the tool references it loaded.
            let loaded: Vec<String> = stream.loaded.iter().cloned().collect();
            for name in loaded {
                let still = stream
                    .conversation
                    .iter()
                    .any(|s| s.label == format!("tool-reference:{name}"));
                if !still {
                    stream.loaded.remove(&name);
                }
            }
        } else if t.rejected {
            let label = format!("{}:result:ExitPlanMode", at.label);
            let source = match feedback.and_then(content_source) {
                Some(TokenSource::Text(text)) => {
                    TokenSource::Text(format!("User rejected the plan: {text}"))
                }
                Some(TokenSource::Count(n)) => TokenSource::Count(r.plan_rejected_header + n),
                None => TokenSource::Count(r.plan_rejected_header),
            };
            stream
                .conversation
                .push(session.message(Role::User, &label, source));
        }
        stream
            .conversation
            .extend(self.strategy.announce(session, t));
    }
}

fn target_str(t: Target) -> &'static str {
    match t {
        Target::Enter => "enter",
        Target::Exit => "exit",
    }
}

/// A readable account of a transition for the trace.
fn describe(t: &Transition) -> String {
    let mut parts = Vec::new();
    if t.entered_plan {
        parts.push(format!("enter plan (saved {})", t.from));
    }
    if let Some(plan) = &t.plan_approved {
        parts.push(format!(
            "plan approved ({} tokens), restore {}",
            plan.tokens, t.to
        ));
    }
    if t.plan_edited {
        parts.push("plan edited by user".to_string());
    }
    if t.left_plan {
        parts.push(format!("leave plan for {}", t.to));
    }
    if t.rejected {
        parts.push("plan rejected, stay in plan".to_string());
    }
    if t.suggest_clarify {
        parts.push("suggest AskUserQuestion to clarify first".to_string());
    }
    if parts.is_empty() {
        if t.from == t.to {
            parts.push(format!("no change ({})", t.to));
        } else {
            parts.push(format!("switch to {}", t.to));
        }
    }
    parts.join("; ")
}
