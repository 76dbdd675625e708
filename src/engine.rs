//! The replay loop: scenario x strategy x cache model -> rows and a decision trace.
//!
//! The reference state machine decides every step; the strategy renders each assistant step as a
//! request (tools, system, conversation so far); the cache model prices it; the simulated clock
//! advances by time to first token, output generation, tool time and human time.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::cache::{
    self, CacheConfig, CacheModel, CacheOutcome, LatencyModel, LatencyTable, PriceTable,
};
use crate::metrics::{RequestRow, SummaryRow};
use crate::plan_mode::{
    CallDecision, CallRequest, MachineConfig, Mode, PlanDoc, PlanError, PlanMachine, Trace,
    TraceEntry, Transition,
};
use crate::prompt::{Request, RequestSettings, Role, Segment, TokenSource};
use crate::scenario::{Content, Session, Step, Target};
use crate::strategy::Strategy;

/// Prices, latency and cache parameters used to fill cost and TTFT.
#[derive(Debug, Clone)]
pub struct ReplayEnv {
    pub prices: PriceTable,
    /// TTFT of models whose provider is not in `latencies`.
    pub latency: LatencyModel,
    /// TTFT per provider (the `provider` of the request's model in the price table).
    pub latencies: LatencyTable,
    /// Parameters of the cache models `run` builds.
    pub caches: CacheConfig,
}

impl Default for ReplayEnv {
    fn default() -> Self {
        let latencies = LatencyTable::bundled();
        ReplayEnv {
            prices: PriceTable::bundled(),
            latency: latencies.default.clone(),
            latencies,
            caches: CacheConfig::default(),
        }
    }
}

impl ReplayEnv {
    /// The TTFT parameters for a provider.
    pub fn latency_for(&self, provider: &str) -> &LatencyModel {
        self.latencies
            .providers
            .get(provider)
            .unwrap_or(&self.latency)
    }
}

/// A replay that could not run: the step is illegal or the input is incomplete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// `file: step 7 (line 42)` or the file alone.
    pub place: String,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}\n  hint: {}", self.place, self.message, self.hint)
    }
}

impl std::error::Error for ReplayError {}

/// The result of one scenario x strategy x cache model.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    pub scenario: String,
    pub strategy: String,
    pub cache: String,
    pub rows: Vec<RequestRow>,
    pub trace: Trace,
    /// Calls the strategy could not render (denied calls under a strategy that hides the tool).
    pub unrendered_calls: Vec<String>,
}

impl Replay {
    pub fn summary(&self) -> SummaryRow {
        SummaryRow::from_rows(&self.scenario, &self.strategy, &self.cache, &self.rows)
    }
}

/// The state of one request stream (one conversation) during a replay.
struct Stream {
    name: String,
    conversation: Vec<Arc<Segment>>,
    clock_ms: u64,
    /// Prompt length of the previous request, to decide whether a request broke the cache.
    previous_prompt: Option<u64>,
}

fn ms(d: std::time::Duration) -> u64 {
    d.as_millis() as u64
}

fn content_source(c: &Content) -> Option<TokenSource> {
    c.tokens
        .map(TokenSource::Count)
        .or_else(|| c.text.clone().map(TokenSource::Text))
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
    let place = |i: usize| format!("{file}: {}", session.step_place(i));
    let plan_err = |i: usize, e: PlanError| ReplayError {
        place: place(i),
        message: e.message,
        hint: e.hint,
    };
    let mut machine = PlanMachine::new(MachineConfig {
        initial_mode: sc.initial_mode,
        auto_available: sc.auto_available,
        external_channels: sc.external_channels,
        plan_mode_required: sc.team.as_ref().is_some_and(|t| t.plan_mode_required),
    });
    let mut out = Replay {
        scenario: sc.name.clone(),
        strategy: strategy.name().to_string(),
        cache: cache.name().to_string(),
        rows: Vec::new(),
        trace: Trace::default(),
        unrendered_calls: Vec::new(),
    };
    let mut stream = Stream {
        name: "main".to_string(),
        conversation: Vec::new(),
        clock_ms: 0,
        previous_prompt: None,
    };
    let human = ms(sc.timing.human);
    for (i, step) in sc.steps.iter().enumerate() {
        let before = machine.mode();
        let stream_label = stream.name.clone();
        let record = |event: String, decision: String, after: Mode, trace: &mut Trace| {
            trace.push(TraceEntry {
                step: i + 1,
                stream: stream_label.clone(),
                event,
                decision,
                mode_before: before,
                mode_after: after,
            })
        };
        match step {
            Step::User(c) => {
                machine
                    .ensure_idle("a user message")
                    .map_err(|e| plan_err(i, e))?;
                stream.clock_ms += ms(sc.timing.typing);
                let seg = session
                    .message_content(
                        Role::User,
                        &format!("step{}:user", i + 1),
                        &c.clone().into_content(),
                    )
                    .map_err(|e| ReplayError {
                        place: place(i),
                        message: e.message,
                        hint: e.hint.unwrap_or_default(),
                    })?;
                stream.conversation.push(seg);
            }
            Step::Wait(d) => {
                stream.clock_ms += ms(d.0);
                record(
                    format!("wait {}", humantime::format_duration(d.0)),
                    "-".into(),
                    before,
                    &mut out.trace,
                );
            }
            Step::Mode(to) => {
                let t = machine.set_mode(*to).map_err(|e| plan_err(i, e))?;
                record(format!("mode {to}"), describe(&t), t.to, &mut out.trace);
                stream.conversation.extend(strategy.announce(session, &t));
            }
            Step::Assistant(turn) => {
                machine
                    .ensure_idle("an assistant reply")
                    .map_err(|e| plan_err(i, e))?;
                let mode = machine.mode();
                let reply_source = turn
                    .tokens
                    .map(TokenSource::Count)
                    .or_else(|| turn.text.clone().map(TokenSource::Text))
                    .unwrap_or(TokenSource::Count(0));
                let reply = session.message(
                    Role::Assistant,
                    &format!("step{}:assistant", i + 1),
                    reply_source,
                );
                let mut segments = strategy.tools(session, mode);
                segments.extend(strategy.system(session, mode));
                segments.extend(stream.conversation.iter().cloned());
                let request = Request {
                    index: out.rows.len(),
                    stream: stream.name.clone(),
                    step: i,
                    model: strategy.model(session, mode),
                    sent_at_ms: stream.clock_ms,
                    segments,
                    settings: RequestSettings::default(),
                    reply: vec![reply.clone()],
                    output_tokens: reply.len() as u64 + turn.reasoning_tokens as u64,
                };
                let row = price(&request, cache, env, &mut stream, mode, &out, session)?;
                out.rows.push(row);
                stream.conversation.push(reply);
                // The reply's tool calls, decided by the machine in order.
                for (j, call) in turn.calls.iter().enumerate() {
                    let tool = session.tool(&call.tool).ok_or_else(|| ReplayError {
                        place: place(i),
                        message: format!("unknown tool `{}`", call.tool),
                        hint: "add it to [[tools]]".into(),
                    })?;
                    let plan = call
                        .plan_tokens
                        .map(|n| PlanDoc {
                            tokens: n,
                            text: None,
                        })
                        .or_else(|| {
                            call.plan.as_ref().map(|t| PlanDoc {
                                tokens: session.tokenizer.count(&TokenSource::Text(t.clone()))
                                    as u32,
                                text: Some(t.clone()),
                            })
                        });
                    let decision = machine
                        .call(&CallRequest {
                            tool: &call.tool,
                            access: tool.access,
                            command: call.command.as_deref(),
                            plan_file: call.plan_file,
                            plan,
                            allowed_prompts: &call.allowed_prompts,
                        })
                        .map_err(|e| plan_err(i, e))?;
                    let event = match &call.command {
                        Some(c) => format!("call {} `{c}`", call.tool),
                        None => format!("call {}", call.tool),
                    };
                    record(event, decision.to_string(), machine.mode(), &mut out.trace);
                    let label = format!("step{}:result{}:{}", i + 1, j + 1, call.tool);
                    match decision {
                        CallDecision::Allow(_) | CallDecision::Ask => {
                            if decision == CallDecision::Ask {
                                stream.clock_ms += human;
                            }
                            stream.clock_ms += call.duration.map(ms).unwrap_or(ms(sc.timing.tool));
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
                                out.unrendered_calls.push(format!(
                                    "{}: call {} {} cannot be made under {} (tool not offered); no denied round trip",
                                    session.step_place(i),
                                    j + 1,
                                    call.tool,
                                    strategy.name()
                                ));
                            }
                        }
                        CallDecision::AwaitApproval(_) => {}
                    }
                }
            }
            Step::Approve(target) => {
                let t = machine.approve(*target).map_err(|e| plan_err(i, e))?;
                stream.clock_ms += human;
                record(
                    format!("approve {}", target_str(*target)),
                    describe(&t),
                    t.to,
                    &mut out.trace,
                );
                apply_answer(session, strategy, &mut stream, i, &t, None);
            }
            Step::Decline(target) => {
                let t = machine.decline(*target).map_err(|e| plan_err(i, e))?;
                stream.clock_ms += human;
                record(
                    format!("decline {}", target_str(*target)),
                    describe(&t),
                    t.to,
                    &mut out.trace,
                );
                stream
                    .conversation
                    .push(session.enter_declined_result.clone());
            }
            Step::Reject(feedback) => {
                let t = machine.reject().map_err(|e| plan_err(i, e))?;
                stream.clock_ms += human;
                record("reject exit".into(), describe(&t), t.to, &mut out.trace);
                apply_answer(
                    session,
                    strategy,
                    &mut stream,
                    i,
                    &t,
                    Some(&feedback.clone().into_content()),
                );
            }
            Step::Edit(p) => {
                let plan = match (&p.plan_tokens, &p.plan) {
                    (Some(n), _) => PlanDoc {
                        tokens: *n,
                        text: None,
                    },
                    (None, Some(t)) => PlanDoc {
                        tokens: session.tokenizer.count(&TokenSource::Text(t.clone())) as u32,
                        text: Some(t.clone()),
                    },
                    (None, None) => unreachable!("validated at load"),
                };
                let t = machine.edit(plan).map_err(|e| plan_err(i, e))?;
                stream.clock_ms += human;
                record(
                    "edit plan, approve exit".into(),
                    describe(&t),
                    t.to,
                    &mut out.trace,
                );
                apply_answer(session, strategy, &mut stream, i, &t, None);
            }
            Step::Lead(resp) => {
                let (t, request_id) = machine
                    .lead_response(resp.approve)
                    .map_err(|e| plan_err(i, e))?;
                stream.clock_ms += human;
                let verb = if resp.approve { "approve" } else { "reject" };
                record(
                    format!("lead {verb} {request_id}"),
                    describe(&t),
                    t.to,
                    &mut out.trace,
                );
                let feedback = resp.feedback.clone().map(|f| Content {
                    text: Some(f),
                    ..Content::default()
                });
                apply_answer(session, strategy, &mut stream, i, &t, feedback.as_ref());
            }
        }
    }
    if let Some(target) = machine.awaiting() {
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
    Ok(out)
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

/// Appends the tool result that answers a deferred plan tool, then the strategy's announcements.
fn apply_answer(
    session: &Session,
    strategy: &dyn Strategy,
    stream: &mut Stream,
    step: usize,
    t: &Transition,
    feedback: Option<&Content>,
) {
    let r = &session.scenario.reminders;
    if t.entered_plan {
        stream
            .conversation
            .push(session.enter_approved_result.clone());
    } else if let Some(plan) = &t.plan_approved {
        let label = format!("step{}:result:ExitPlanMode", step + 1);
        let source = match &plan.text {
            Some(text) => TokenSource::Text(format!("User approved the plan.\n\n{text}")),
            None => TokenSource::Count(r.plan_approved_header + plan.tokens),
        };
        let approval = session.message(Role::User, &label, source);
        strategy.after_approval(session, &mut stream.conversation, approval);
    } else if t.rejected {
        let label = format!("step{}:result:ExitPlanMode", step + 1);
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
    stream.conversation.extend(strategy.announce(session, t));
}

/// Prices one request against the cache and advances the stream's clock past the reply.
fn price(
    request: &Request,
    cache: &mut dyn CacheModel,
    env: &ReplayEnv,
    stream: &mut Stream,
    mode: Mode,
    out: &Replay,
    session: &Session,
) -> Result<RequestRow, ReplayError> {
    let model = env.prices.get(&request.model).ok_or_else(|| ReplayError {
        place: session.path.display().to_string(),
        message: format!("model `{}` is not in the pricing table", request.model),
        hint: format!(
            "use one of: {}; or add it with --pricing FILE",
            env.prices.names().collect::<Vec<_>>().join(", ")
        ),
    })?;
    let outcome: CacheOutcome = cache.lookup(request);
    let ttft = env.latency_for(&model.provider).ttft_ms(&outcome);
    let visible_at = request.sent_at_ms + ttft.round() as u64;
    let decode = session.scenario.timing.decode_tokens_per_s.max(1e-3);
    let completed_at = visible_at + (request.output_tokens as f64 * 1000.0 / decode).round() as u64;
    cache.store(request, &outcome, visible_at, completed_at);
    stream.clock_ms = completed_at;
    let broke = stream
        .previous_prompt
        .is_some_and(|prev| outcome.cached_tokens < prev);
    stream.previous_prompt = Some(outcome.prompt_tokens);
    let break_reason = match (&outcome.stop, broke) {
        (Some(stop), true) => stop.to_string(),
        _ => String::new(),
    };
    Ok(RequestRow {
        scenario: out.scenario.clone(),
        strategy: out.strategy.clone(),
        cache: out.cache.clone(),
        request: out.rows.len() + 1,
        step: request.step + 1,
        mode: mode.to_string(),
        model: request.model.clone(),
        prompt_tokens: outcome.prompt_tokens,
        cached_tokens: outcome.cached_tokens,
        cache_write_tokens: outcome.cache_write_tokens(),
        recomputed_tokens: outcome.recomputed_tokens(),
        output_tokens: request.output_tokens,
        hit_rate: outcome.hit_rate(),
        cost_usd: model.cost_billed(&outcome, request.output_tokens, cache.charges_writes()),
        ttft_ms: ttft,
        break_reason,
        stream: request.stream.clone(),
        sent_at_ms: request.sent_at_ms,
        input_tokens: outcome.uncached_input_tokens,
        cache_creation_input_tokens: outcome.cache_write_tokens(),
        cache_creation_5m_tokens: outcome.write_5m_tokens,
        cache_creation_1h_tokens: outcome.write_1h_tokens,
        cache_read_input_tokens: outcome.cached_tokens,
    })
}

/// Every replay of a run, plus the cross-strategy equivalence verdicts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunReport {
    pub replays: Vec<Replay>,
    /// Per scenario: differences between strategies' decision traces (empty when equivalent).
    pub violations: Vec<String>,
}

impl RunReport {
    pub fn rows(&self) -> impl Iterator<Item = &RequestRow> {
        self.replays.iter().flat_map(|r| r.rows.iter())
    }
    pub fn summaries(&self) -> Vec<SummaryRow> {
        self.replays.iter().map(Replay::summary).collect()
    }
}

/// Replays every session under every strategy and cache model, and checks that all strategies
/// made the same decisions.
pub fn run(
    sessions: &[Session],
    strategies: &[Box<dyn Strategy>],
    caches: &[String],
    env: &ReplayEnv,
) -> Result<RunReport, ReplayError> {
    let mut report = RunReport::default();
    for session in sessions {
        let mut first: Option<(String, Trace)> = None;
        for strategy in strategies {
            for cache_name in caches {
                let mut cache =
                    cache::build_with(cache_name, &env.prices, &env.caches).map_err(|e| {
                        ReplayError {
                            place: "--cache".into(),
                            message: e,
                            hint: "see `plancache run --help`".into(),
                        }
                    })?;
                let replay = replay(session, strategy.as_ref(), cache.as_mut(), env)?;
                match &first {
                    None => first = Some((strategy.name().to_string(), replay.trace.clone())),
                    Some((name, trace)) => {
                        if let Some(diff) = equivalence_violation(
                            &session.scenario.name,
                            name,
                            trace,
                            strategy.name(),
                            &replay.trace,
                        ) {
                            report.violations.push(diff);
                        }
                    }
                }
                report.replays.push(replay);
            }
        }
    }
    Ok(report)
}

/// Describes the first difference between two strategies' traces, if any.
pub fn equivalence_violation(
    scenario: &str,
    a_name: &str,
    a: &Trace,
    b_name: &str,
    b: &Trace,
) -> Option<String> {
    let (i, x, y) = a.first_difference(b)?;
    let show = |e: Option<&TraceEntry>| e.map_or("(nothing)".to_string(), |e| e.to_string());
    Some(format!(
        "{scenario}: decision {} differs between {a_name} and {b_name}:\n  {a_name}: {}\n  {b_name}: {}",
        i + 1,
        show(x),
        show(y)
    ))
}
