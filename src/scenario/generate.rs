//! Synthetic plan-mode sessions from parameters and a seed, for sweeps, property tests and
//! benchmarks.
//!
//! [`generate`] draws a complete scenario (toolset, system prompt, context block, plan-mode
//! entry, exploration rounds with parallel read-only calls, optional Explore subagents, the plan
//! written to the plan file, ExitPlanMode with an allowed prompt, rejections, the review wait,
//! implementation turns with edits and test runs) from [`GeneratorParams`]. All randomness comes
//! from a self-contained splitmix64 stream seeded by `seed`, so the same parameters give the same
//! scenario, and [`to_toml`] the same bytes, on every machine and dependency version.
//!
//! Default sizes follow the Claude Code calibration used by the bundled scenarios
//! (`scenarios/claude-code-feature.toml`): ~30 tools totalling ~8k tokens with EnterPlanMode 1,296
//! and ExitPlanMode 648, a 6.5k system prompt, a 1.8k CLAUDE.md block.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::format::{
    AgentSpec, Approval, Blocks, Call, Content, ContextBlock, Deferral, Reminders, Scenario, Step,
    Target, TextOrContent, Timing, ToolDef, Turn, WaitDuration,
};
use crate::plan_mode::{AllowedPrompt, Mode, PlanFiles};
use crate::prompt::Encoding;

/// An inclusive range of sizes in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRange {
    /// Smallest size, in tokens.
    pub min: u32,
    /// Largest size, in tokens (at least `min`).
    pub max: u32,
}

impl TokenRange {
    /// The range `min..=max`.
    pub const fn new(min: u32, max: u32) -> Self {
        TokenRange { min, max }
    }
}

/// What a generated session looks like. Every field has a default (`GeneratorParams::default()`),
/// so a params file names only what it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GeneratorParams {
    /// Seed of every random draw.
    pub seed: u64,
    /// Scenario name (default `generated-<seed>`).
    pub name: Option<String>,
    /// Model that serves the session (a name of the bundled price table).
    pub model: String,
    /// Plan-mode model for `model-switch` (none: same as `model`).
    pub plan_model: Option<String>,
    /// Number of tool definitions (at least the 10 core tools).
    pub tools: u32,
    /// Total tokens of all tool definitions (at least 50 per tool plus the two plan tools).
    pub tool_tokens: u32,
    /// Sizes of the two plan tools (Claude Code 2.1.240: 1,296 and 648).
    pub enter_plan_tool_tokens: u32,
    /// Size of the `ExitPlanMode` tool (see `enter_plan_tool_tokens`).
    pub exit_plan_tool_tokens: u32,
    /// Size of the system prompt.
    pub system_tokens: u32,
    /// Size of an early context block (CLAUDE.md); 0 for none.
    pub context_tokens: u32,
    /// The model calls EnterPlanMode (approved by the user) instead of the user switching modes.
    pub model_initiated: bool,
    /// Exploration requests in plan mode before the plan is written.
    pub exploration_rounds: u32,
    /// Most parallel read-only calls in one exploration reply (at least 1).
    pub max_parallel_calls: u32,
    /// Size of one exploration result.
    pub result_tokens: TokenRange,
    /// Visible output of one assistant reply.
    pub reply_tokens: TokenRange,
    /// Size of the plan the model writes before exiting plan mode.
    pub plan_tokens: u32,
    /// Rejections with feedback before the plan is approved.
    pub rejections: u32,
    /// Time the user reads the plan before each answer (`"2m"`, `"7m"`).
    pub review_wait: String,
    /// Implementation requests after approval (edits and test runs); a closing reply follows
    /// them, so a session makes `implementation_turns + 1` requests after the approval.
    pub implementation_turns: u32,
    /// The user approves the plan with "clear context and implement" (`approve = { exit = true,
    /// clear_context = true }`): the implementation starts from tools, system, the context
    /// block and the plan.
    pub clear_context: bool,
    /// Explore subagents launched in parallel during exploration (0 for none).
    pub subagents: u32,
    /// Requests per subagent.
    pub subagent_rounds: u32,
    /// Size of each subagent's system prompt.
    pub subagent_system_tokens: u32,
}

impl Default for GeneratorParams {
    fn default() -> Self {
        GeneratorParams {
            seed: 0,
            name: None,
            model: "claude-sonnet-4-5".into(),
            plan_model: Some("claude-opus-4-5".into()),
            tools: 30,
            tool_tokens: 8000,
            enter_plan_tool_tokens: 1296,
            exit_plan_tool_tokens: 648,
            system_tokens: 6500,
            context_tokens: 1800,
            model_initiated: false,
            exploration_rounds: 12,
            max_parallel_calls: 3,
            result_tokens: TokenRange::new(150, 4000),
            reply_tokens: TokenRange::new(40, 250),
            plan_tokens: 900,
            rejections: 0,
            review_wait: "2m".into(),
            implementation_turns: 8,
            clear_context: false,
            subagents: 0,
            subagent_rounds: 4,
            subagent_system_tokens: 3000,
        }
    }
}

/// Most turns of one kind a generated session may have.
const MAX_TURNS: u32 = 10_000;

/// Core tools every generated session has, in prompt order (name, relative size).
const CORE_TOOLS: [(&str, u32); 10] = [
    ("Agent", 9),
    ("Bash", 12),
    ("Glob", 3),
    ("Grep", 5),
    ("Read", 5),
    ("Edit", 4),
    ("Write", 3),
    ("TodoWrite", 8),
    ("WebFetch", 3),
    ("AskUserQuestion", 4),
];

const EXPLORE_TOOLS: [&str; 3] = ["Read", "Grep", "Glob"];

/// Most tool definitions a generated session may have (keeps sizes within `u32`).
const MAX_TOOLS: u32 = 2000;

impl GeneratorParams {
    /// Checks the parameters; `generate` clamps what this rejects to the nearest valid value.
    pub fn validate(&self) -> Result<(), GenerateError> {
        let core = CORE_TOOLS.len() as u32 + 2;
        if self.tools < core {
            return Err(GenerateError::BelowCore {
                tools: self.tools,
                core,
            });
        }
        let floor = self.min_tool_tokens();
        if self.tool_tokens < floor {
            return Err(GenerateError::ToolTokens {
                tokens: self.tool_tokens,
                floor,
            });
        }
        for (what, r) in [
            ("result_tokens", self.result_tokens),
            ("reply_tokens", self.reply_tokens),
        ] {
            if r.min > r.max {
                return Err(GenerateError::Range {
                    what,
                    min: r.min,
                    max: r.max,
                });
            }
        }
        if self.max_parallel_calls == 0 {
            return Err(GenerateError::NoParallelCalls);
        }
        // Bounds that keep a generated session a session (and its replay in memory): far above
        // any real plan session, far below what would exhaust the machine.
        for (what, n, limit) in [
            ("exploration_rounds", self.exploration_rounds, MAX_TURNS),
            ("implementation_turns", self.implementation_turns, MAX_TURNS),
            ("rejections", self.rejections, MAX_TURNS),
            ("subagents", self.subagents, 256),
            ("subagent_rounds", self.subagent_rounds, MAX_TURNS),
            ("max_parallel_calls", self.max_parallel_calls, 256),
            ("tools", self.tools, 1_000),
        ] {
            if n > limit {
                return Err(GenerateError::AboveLimit { what, n, limit });
            }
        }
        for (what, n) in [
            ("tool_tokens", self.tool_tokens),
            ("system_tokens", self.system_tokens),
            ("context_tokens", self.context_tokens),
            ("plan_tokens", self.plan_tokens),
            ("enter_plan_tool_tokens", self.enter_plan_tool_tokens),
            ("exit_plan_tool_tokens", self.exit_plan_tool_tokens),
            ("subagent_system_tokens", self.subagent_system_tokens),
            ("result_tokens max", self.result_tokens.max),
            ("reply_tokens max", self.reply_tokens.max),
        ] {
            if n as i64 > crate::scenario::MAX_TOKENS {
                return Err(GenerateError::AbovePrompt { what, n });
            }
        }
        if self.subagents > 0 && self.subagent_rounds == 0 {
            return Err(GenerateError::NoSubagentRounds);
        }
        humantime::parse_duration(&self.review_wait).map_err(|source| {
            GenerateError::ReviewWait {
                text: self.review_wait.clone(),
                source,
            }
        })?;
        self.check_budget(crate::budget::Budget::current())
    }

    /// Rejects parameters whose largest possible session exceeds the resource budget, before
    /// anything is drawn (the generated scenario is checked again when it is loaded).
    pub fn check_budget(&self, budget: crate::budget::Budget) -> Result<(), GenerateError> {
        let (tokens, steps, streams) = self.worst_case();
        for (what, n, limit, flag) in [
            (
                "tokens of content",
                tokens,
                budget.max_session_tokens,
                crate::budget::TOKENS_FLAG,
            ),
            ("steps", steps, budget.max_steps, crate::budget::STEPS_FLAG),
            (
                "request streams",
                streams,
                budget.max_streams,
                crate::budget::STREAMS_FLAG,
            ),
        ] {
            if n > u128::from(limit) {
                return Err(GenerateError::OverBudget {
                    n,
                    what,
                    limit,
                    flag,
                });
            }
        }
        Ok(())
    }

    /// Upper bounds of (content tokens, steps, streams) of any session drawn from these
    /// parameters, counted as the budget counts a scenario document: every `*tokens` size, and
    /// text (names, paths, commands) at one token per byte, allowed for generously per step.
    fn worst_case(&self) -> (u128, u128, u128) {
        let n = |x: u32| u128::from(x);
        const TEXT_PER_STEP: u128 = 256;
        let reply = n(self.reply_tokens.max.max(self.reply_tokens.min));
        let result = n(self.result_tokens.max.max(self.result_tokens.min));
        let parallel = n(self.max_parallel_calls.max(1));
        let rounds = n(self.exploration_rounds);
        let rejections = n(self.rejections);
        let agents = n(self.subagents);
        let agent_steps = agents * n(self.subagent_rounds.max(1));
        let mut tokens = n(self.tool_tokens.max(self.min_tool_tokens()))
            + n(self.enter_plan_tool_tokens)
            + n(self.exit_plan_tool_tokens)
            + n(self.system_tokens)
            + n(self.context_tokens)
            + 150
            + reply;
        tokens += rounds * (reply + parallel * result);
        if agents > 0 {
            tokens += reply
                + agents * (n(self.subagent_system_tokens) + 300 + 1200)
                + agent_steps * (reply + result);
        }
        // Plan k (0 = first) is at most plan_tokens + 200 k; each write repeats it in the reply
        // and in the plan file, plus up to 60 + 20 tokens, and each ExitPlanMode reply is <= 90.
        let plans = rejections + 1;
        tokens += plans * (2 * n(self.plan_tokens) + 170) + 400 * rejections * plans / 2;
        tokens += rejections * 120;
        tokens += n(self.implementation_turns) * (900 + 1500);
        let steps = 1
            + 2
            + rounds
            + 2
            + agent_steps
            + 2 * plans
            + 3 * rejections
            + 2
            + n(self.implementation_turns)
            + 1;
        let calls = rounds * parallel + agent_steps + 2 * plans + 2 * n(self.implementation_turns);
        tokens += TEXT_PER_STEP * (steps + calls) + 64 * n(self.tool_count() as u32);
        (tokens, steps, 1 + agents)
    }

    fn min_tool_tokens(&self) -> u32 {
        let others = self.tool_count() as u32 - 2;
        (50 * others)
            .saturating_add(self.enter_plan_tool_tokens)
            .saturating_add(self.exit_plan_tool_tokens)
    }

    /// The number of tools generated: `tools` clamped to the valid range.
    fn tool_count(&self) -> usize {
        self.tools.clamp(CORE_TOOLS.len() as u32 + 2, MAX_TOOLS) as usize
    }
}

/// splitmix64: a tiny, fixed generator (same stream on every platform and version).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub(crate) fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Uniform in `lo..=hi` (modulo bias is negligible for these ranges).
    fn between(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        lo + (self.next() % (u64::from(hi - lo) + 1)) as u32
    }

    fn range(&mut self, r: TokenRange) -> u32 {
        self.between(r.min, r.max.max(r.min))
    }
}

fn tokens(n: u32) -> Content {
    Content::tokens(n)
}

fn turn(tokens: u32, calls: Vec<Call>) -> Step {
    Step::Assistant(Turn {
        tokens: Some(tokens),
        calls,
        ..Turn::default()
    })
}

fn call(tool: &str, result_tokens: u32) -> Call {
    Call {
        tool: tool.to_string(),
        result_tokens: Some(result_tokens),
        ..Call::default()
    }
}

/// Tool definitions: the core tools, extra `mcp__ext__tool_<k>` tools, then the two plan tools;
/// sizes drawn from the seed and scaled so they sum to exactly `tool_tokens`.
fn toolset(p: &GeneratorParams, rng: &mut Rng) -> Vec<ToolDef> {
    let count = p.tool_count();
    let extra = count - CORE_TOOLS.len() - 2;
    let mut names: Vec<String> = CORE_TOOLS.iter().map(|(n, _)| n.to_string()).collect();
    let mut weights: Vec<u32> = CORE_TOOLS.iter().map(|(_, w)| w * 100).collect();
    for k in 0..extra {
        names.push(format!("mcp__ext__tool_{}", k + 1));
        weights.push(rng.between(100, 500));
    }
    let budget = p.tool_tokens.max(p.min_tool_tokens()).saturating_sub(
        p.enter_plan_tool_tokens
            .saturating_add(p.exit_plan_tool_tokens),
    );
    let spare = budget.saturating_sub(50 * names.len() as u32);
    let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
    let mut sizes: Vec<u32> = weights
        .iter()
        .map(|w| 50 + (u64::from(spare) * u64::from(*w) / total) as u32)
        .collect();
    // Integer division leaves a remainder: give it to the first tool, so the sum is exact.
    let sum: u32 = sizes.iter().fold(0u32, |a, b| a.saturating_add(*b));
    sizes[0] = sizes[0].saturating_add(budget.saturating_sub(sum));
    let mut tools: Vec<ToolDef> = names
        .into_iter()
        .zip(sizes)
        .map(|(name, size)| ToolDef {
            name,
            access: None,
            tokens: Some(size),
            description: None,
            schema: None,
            deferred: false,
            cache_control: None,
        })
        .collect();
    for t in tools.iter_mut().filter(|t| t.name.starts_with("mcp__")) {
        t.deferred = true;
    }
    for (name, size) in [
        ("EnterPlanMode", p.enter_plan_tool_tokens),
        ("ExitPlanMode", p.exit_plan_tool_tokens),
    ] {
        tools.push(ToolDef {
            name: name.into(),
            access: None,
            tokens: Some(size),
            description: None,
            schema: None,
            deferred: false,
            cache_control: None,
        });
    }
    tools
}

/// Draws a scenario from the parameters (invalid values are clamped; see
/// [`GeneratorParams::validate`]).
pub fn generate(p: &GeneratorParams) -> Scenario {
    let mut rng = Rng(p.seed);
    let tools = toolset(p, &mut rng);
    let plans = PlanFiles::new("plans", p.seed);
    let review = humantime::parse_duration(&p.review_wait).unwrap_or(Duration::from_secs(120));
    let mut steps = opening(p, &mut rng);
    explore(p, &mut rng, &mut steps);
    let plan_path = plans.main_plan_path().display().to_string();
    plan_and_review(p, &mut rng, &plan_path, review, &mut steps);
    implement(p, &mut rng, &mut steps);
    steps.push(turn(rng.range(p.reply_tokens), Vec::new()));
    scenario(p, tools, steps)
}

/// The user's first message and the way into plan mode (the model's own call, or the user's
/// mode switch).
fn opening(p: &GeneratorParams, rng: &mut Rng) -> Vec<Step> {
    let mut steps = vec![Step::User(TextOrContent::Content(tokens(
        rng.between(30, 150),
    )))];
    if p.model_initiated {
        steps.push(turn(
            rng.range(p.reply_tokens),
            vec![Call {
                tool: "EnterPlanMode".into(),
                ..Call::default()
            }],
        ));
        steps.push(Step::Approve(Target::Enter.into()));
    } else {
        steps.push(Step::Mode(Mode::Plan));
    }
    steps
}

/// The read-only exploration rounds, with the subagents after the first (or alone).
fn explore(p: &GeneratorParams, rng: &mut Rng, steps: &mut Vec<Step>) {
    let parallel = p.max_parallel_calls.max(1);
    for round in 0..p.exploration_rounds {
        let n = rng.between(1, parallel);
        let calls = (0..n)
            .map(|_| {
                let tool = EXPLORE_TOOLS[(rng.next() % EXPLORE_TOOLS.len() as u64) as usize];
                call(tool, rng.range(p.result_tokens))
            })
            .collect();
        steps.push(turn(rng.range(p.reply_tokens), calls));
        if round == 0 && p.subagents > 0 {
            steps.push(turn(rng.range(p.reply_tokens), Vec::new()));
            steps.push(Step::Agents(subagents(p, rng)));
        }
    }
    if p.exploration_rounds == 0 && p.subagents > 0 {
        steps.push(turn(rng.range(p.reply_tokens), Vec::new()));
        steps.push(Step::Agents(subagents(p, rng)));
    }
}

/// The plan written and offered, each rejection with its review wait and a longer plan, then
/// the approving review.
fn plan_and_review(
    p: &GeneratorParams,
    rng: &mut Rng,
    plan_path: &str,
    review: Duration,
    steps: &mut Vec<Step>,
) {
    let write_plan = |plan_tokens: u32, rng: &mut Rng| {
        turn(
            plan_tokens.saturating_add(rng.between(20, 60)),
            vec![Call {
                tool: "Write".into(),
                path: Some(plan_path.to_string()),
                plan_tokens: Some(plan_tokens),
                result_tokens: Some(20),
                ..Call::default()
            }],
        )
    };
    let exit = |rng: &mut Rng| {
        turn(
            rng.between(40, 90),
            vec![Call {
                tool: "ExitPlanMode".into(),
                allowed_prompts: vec![AllowedPrompt::new("Bash", "run tests")],
                ..Call::default()
            }],
        )
    };
    let mut plan_tokens = p.plan_tokens;
    steps.push(write_plan(plan_tokens, rng));
    steps.push(exit(rng));
    for _ in 0..p.rejections {
        steps.push(Step::Wait(WaitDuration::new(review)));
        steps.push(Step::Reject(TextOrContent::Content(tokens(
            rng.between(20, 120),
        ))));
        plan_tokens = plan_tokens.saturating_add(rng.between(30, 200));
        steps.push(write_plan(plan_tokens, rng));
        steps.push(exit(rng));
    }
    steps.push(Step::Wait(WaitDuration::new(review)));
    steps.push(Step::Approve(Approval {
        target: Target::Exit,
        clear_context: p.clear_context,
    }));
}

/// The implementation turns: edits, with a test run every third turn.
fn implement(p: &GeneratorParams, rng: &mut Rng, steps: &mut Vec<Step>) {
    for k in 0..p.implementation_turns {
        let calls = if k % 3 == 2 {
            vec![Call {
                tool: "Bash".into(),
                command: Some("cargo test".into()),
                result_tokens: Some(rng.between(200, 1500)),
                duration: Some(Duration::from_secs(u64::from(rng.between(5, 60)))),
                ..Call::default()
            }]
        } else {
            (0..rng.between(1, 2))
                .map(|_| call("Edit", rng.between(20, 80)))
                .collect()
        };
        steps.push(turn(rng.between(150, 900), calls));
    }
}

/// The scenario around the drawn tools and steps.
fn scenario(p: &GeneratorParams, tools: Vec<ToolDef>, steps: Vec<Step>) -> Scenario {
    Scenario {
        name: p.name.clone().unwrap_or_else(|| format!("generated-{}", p.seed)),
        description: format!(
            "Generated plan session (seed {}): {} exploration rounds, {} rejections, {} review, {} implementation turns, {} subagents",
            p.seed, p.exploration_rounds, p.rejections, p.review_wait, p.implementation_turns, p.subagents
        ),
        model: p.model.clone(),
        plan_model: p.plan_model.clone(),
        tokenizer: Encoding::default(),
        seed: p.seed,
        initial_mode: Mode::Default,
        auto_available: true,
        external_channels: false,
        plans_dir: "plans".into(),
        system: Blocks::One(tokens(p.system_tokens)),
        plan_system: None,
        tools,
        reminders: Reminders::default(),
        team: None,
        timing: Timing::default(),
        context: if p.context_tokens > 0 {
            vec![ContextBlock {
                name: "CLAUDE.md".into(),
                tokens: Some(p.context_tokens),
                ..ContextBlock::default()
            }]
        } else {
            Vec::new()
        },
        deferred_tools: Deferral::default(),
        ttl: None,
        keepalive_max_tokens: 1,
        steps,
    }
}

fn subagents(p: &GeneratorParams, rng: &mut Rng) -> Vec<AgentSpec> {
    (0..p.subagents)
        .map(|k| {
            let mut steps: Vec<Step> = (0..p.subagent_rounds.saturating_sub(1))
                .map(|_| {
                    let tool = EXPLORE_TOOLS[(rng.next() % EXPLORE_TOOLS.len() as u64) as usize];
                    turn(
                        rng.range(p.reply_tokens),
                        vec![call(tool, rng.range(p.result_tokens))],
                    )
                })
                .collect();
            steps.push(turn(rng.between(300, 1200), Vec::new()));
            AgentSpec {
                name: format!("explore-{}", k + 1),
                tool: "Agent".into(),
                // Explore agents share one system prompt, as Claude Code's do.
                agent_type: Some("Explore".into()),
                system: Blocks::One(tokens(p.subagent_system_tokens)),
                tools: EXPLORE_TOOLS.iter().map(|s| s.to_string()).collect(),
                prompt: TextOrContent::Content(tokens(rng.between(80, 300))),
                model: None,
                result_tokens: None,
                environment: None,
                steps,
            }
        })
        .collect()
}

/// A scenario as TOML text (the format `load_str` reads back).
pub fn to_toml(scenario: &Scenario) -> Result<String, GenerateError> {
    toml::to_string(scenario).map_err(|source| GenerateError::Serialize {
        name: scenario.name.clone(),
        source,
    })
}

/// Generator parameters that are not valid, or a scenario that cannot be written as TOML.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Fewer tools than the core ones.
    #[error("tools = {tools} is below the {core} core tools")]
    BelowCore {
        /// `tools` as given.
        tools: u32,
        /// The core tools plus the plan tools.
        core: u32,
    },
    /// Tool definitions too small for the tools.
    #[error("tool_tokens = {tokens} is below {floor} (50 per tool plus the plan tools)")]
    ToolTokens {
        /// `tool_tokens` as given.
        tokens: u32,
        /// The least it may be.
        floor: u32,
    },
    /// A token range whose minimum exceeds its maximum.
    #[error("{what}: min {min} exceeds max {max}")]
    Range {
        /// The range's key.
        what: &'static str,
        /// Its minimum.
        min: u32,
        /// Its maximum.
        max: u32,
    },
    /// `max_parallel_calls = 0`.
    #[error("max_parallel_calls must be at least 1")]
    NoParallelCalls,
    /// A count above what keeps a generated session a session.
    #[error("{what} = {n} is above the limit of {limit}")]
    AboveLimit {
        /// The key.
        what: &'static str,
        /// Its value.
        n: u32,
        /// The limit.
        limit: u32,
    },
    /// A size larger than any prompt.
    #[error(
        "{what} = {n} is larger than any prompt (limit {})",
        crate::scenario::MAX_TOKENS
    )]
    AbovePrompt {
        /// The key.
        what: &'static str,
        /// Its value.
        n: u32,
    },
    /// Subagents with no rounds.
    #[error("subagent_rounds must be at least 1 when subagents > 0")]
    NoSubagentRounds,
    /// A `review_wait` that is no duration.
    #[error("review_wait `{text}`: {source}")]
    ReviewWait {
        /// As given.
        text: String,
        /// Why it is no duration.
        source: humantime::DurationError,
    },
    /// Parameters whose largest session exceeds the resource budget.
    #[error("these parameters can make a session of up to {n} {what}, above the limit of {limit}\n  hint: lower exploration_rounds, rejections, implementation_turns, subagents or the token sizes, or raise the limit with `{flag} N`")]
    OverBudget {
        /// The worst case.
        n: u128,
        /// What is counted.
        what: &'static str,
        /// The budget's limit.
        limit: u64,
        /// The flag that raises it.
        flag: &'static str,
    },
    /// The scenario cannot be written as TOML.
    #[error("cannot serialize scenario `{name}`: {source}")]
    Serialize {
        /// The scenario's name.
        name: String,
        /// The serializer's reason.
        source: toml::ser::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget bound of `validate` must hold for what `generate` actually draws: a budget of
    /// exactly the bound accepts the generated scenario, for parameters that stress each term.
    #[test]
    fn worst_case_bounds_the_generated_scenario() {
        let cases = [
            GeneratorParams::default(),
            GeneratorParams {
                rejections: 40,
                plan_tokens: 5000,
                ..GeneratorParams::default()
            },
            GeneratorParams {
                subagents: 6,
                subagent_rounds: 9,
                exploration_rounds: 0,
                model_initiated: true,
                ..GeneratorParams::default()
            },
            GeneratorParams {
                exploration_rounds: 200,
                max_parallel_calls: 12,
                result_tokens: TokenRange::new(4000, 4000),
                implementation_turns: 90,
                tools: 300,
                tool_tokens: 90_000,
                ..GeneratorParams::default()
            },
        ];
        for p in cases {
            let (tokens, steps, streams) = p.worst_case();
            let exact = crate::budget::Budget {
                max_session_tokens: tokens as u64,
                max_steps: steps as u64,
                max_streams: streams as u64,
            };
            exact
                .check_scenario(&generate(&p), std::path::Path::new("g.toml"))
                .unwrap_or_else(|e| panic!("{p:?}: {e}"));
            assert!(p.check_budget(exact).is_ok());
            let tight = crate::budget::Budget {
                max_session_tokens: tokens as u64 - 1,
                ..exact
            };
            assert!(p.check_budget(tight).is_err());
        }
    }

    #[test]
    fn tool_sizes_sum_exactly_and_keep_the_plan_tools() {
        let p = GeneratorParams {
            seed: 11,
            tools: 25,
            tool_tokens: 7000,
            ..GeneratorParams::default()
        };
        let s = generate(&p);
        assert_eq!(s.tools.len(), 25);
        let total: u32 = s.tools.iter().map(|t| t.tokens.unwrap_or(0)).sum();
        assert_eq!(total, 7000);
        let size = |n: &str| s.tools.iter().find(|t| t.name == n).and_then(|t| t.tokens);
        assert_eq!(size("EnterPlanMode"), Some(1296));
        assert_eq!(size("ExitPlanMode"), Some(648));
        assert!(s.tools.iter().all(|t| t.tokens.unwrap_or(0) >= 50));
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let p = GeneratorParams {
            seed: 5,
            subagents: 2,
            rejections: 1,
            ..GeneratorParams::default()
        };
        let a = to_toml(&generate(&p)).unwrap();
        assert_eq!(a, to_toml(&generate(&p)).unwrap());
        let q = GeneratorParams { seed: 6, ..p };
        assert_ne!(a, to_toml(&generate(&q)).unwrap());
    }

    #[test]
    fn step_counts_follow_the_parameters() {
        // user, mode, 5 exploration, write plan, exit, (wait, reject, write, exit) x2, wait,
        // approve, 4 implementation, final reply = 2 + 5 + 2 + 8 + 2 + 4 + 1 = 24 steps.
        let p = GeneratorParams {
            exploration_rounds: 5,
            rejections: 2,
            implementation_turns: 4,
            ..GeneratorParams::default()
        };
        let s = generate(&p);
        assert_eq!(s.steps.len(), 24);
        let rejects = s
            .steps
            .iter()
            .filter(|st| matches!(st, Step::Reject(_)))
            .count();
        assert_eq!(rejects, 2);
    }

    #[test]
    fn serialized_scenario_reads_back_identically() {
        let p = GeneratorParams {
            seed: 3,
            subagents: 1,
            model_initiated: true,
            ..GeneratorParams::default()
        };
        let text = to_toml(&generate(&p)).unwrap();
        let back = crate::scenario::load_str(&text, std::path::Path::new("g.toml")).unwrap();
        assert_eq!(to_toml(&back).unwrap(), text);
    }

    #[test]
    fn validate_names_the_bad_field() {
        let p = GeneratorParams {
            tools: 5,
            ..GeneratorParams::default()
        };
        assert!(p.validate().unwrap_err().to_string().contains("tools = 5"));
        let p = GeneratorParams {
            result_tokens: TokenRange::new(10, 5),
            ..GeneratorParams::default()
        };
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .contains("result_tokens"));
        assert!(GeneratorParams::default().validate().is_ok());
    }
}
