//! Sessions and request sequences shared by the benchmarks.

use std::path::Path;
use std::sync::{Arc, Mutex};

use plancache::cache::{self, CacheModel, CacheOutcome, PriceTable};
use plancache::engine::{self, ReplayEnv};
use plancache::prompt::{Encoding, Request, Tokenizer};
use plancache::scenario::generate::{generate, to_toml, GeneratorParams, TokenRange};
use plancache::scenario::Session;
use plancache::strategy::PermissionMode;

/// A generated plan session of about `requests` API requests whose context grows by ~650 tokens a
/// request: 200 requests end near 150k tokens, like long real agent sessions.
pub fn long_session(requests: u32, seed: u64) -> Session {
    // Requests: 1 (enter) + exploration + 1 (exit) + implementation.
    let explore = (requests * 3 / 5).max(1);
    let implement = requests.saturating_sub(explore + 2).max(1);
    let params = GeneratorParams {
        seed,
        name: Some(format!("long-{requests}")),
        plan_model: None,
        exploration_rounds: explore,
        implementation_turns: implement,
        max_parallel_calls: 1,
        result_tokens: TokenRange::new(300, 900),
        reply_tokens: TokenRange::new(40, 110),
        ..GeneratorParams::default()
    };
    session_of(&params)
}

/// The same shape as [`long_session`] with a tenth of the sizes (a few tokens per result and
/// reply, small tools and system prompt): about 65 tokens a request, so a 1,000-request session
/// ends near 70k tokens. For counting work in debug builds, where tokens cost time but the
/// question (does the work grow with the prompt?) does not depend on their size.
pub fn small_session(requests: u32, seed: u64) -> Session {
    let explore = (requests * 3 / 5).max(1);
    let implement = requests.saturating_sub(explore + 2).max(1);
    let params = GeneratorParams {
        seed,
        name: Some(format!("small-{requests}")),
        plan_model: None,
        exploration_rounds: explore,
        implementation_turns: implement,
        max_parallel_calls: 1,
        result_tokens: TokenRange::new(30, 90),
        reply_tokens: TokenRange::new(4, 11),
        tools: 10,
        tool_tokens: 800,
        enter_plan_tool_tokens: 130,
        exit_plan_tool_tokens: 65,
        system_tokens: 650,
        context_tokens: 180,
        plan_tokens: 120,
        ..GeneratorParams::default()
    };
    session_of(&params)
}

/// A session from generator parameters.
pub fn session_of(params: &GeneratorParams) -> Session {
    let scenario = generate(params);
    let text = to_toml(&scenario).expect("generated scenarios serialize");
    Session::new(
        scenario,
        Path::new("generated.toml"),
        &text,
        Arc::new(Tokenizer::new(Encoding::O200kBase)),
    )
    .expect("generated scenarios are valid")
}

/// Every bundled scenario.
pub fn bundled() -> Vec<Session> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| Session::load(p, None).expect("bundled scenarios load"))
        .collect()
}

/// One priced request as the engine sent it, with the times the cache model was told.
#[derive(Clone)]
pub struct Recorded {
    pub request: Request,
    pub visible_at_ms: u64,
    pub completed_at_ms: u64,
}

/// Wraps a cache model and keeps every request it sees.
struct Recorder {
    inner: Box<dyn CacheModel>,
    seen: Arc<Mutex<Vec<Recorded>>>,
}

impl CacheModel for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        self.inner.lookup(req)
    }
    fn store(&mut self, req: &Request, outcome: &CacheOutcome, visible: u64, completed: u64) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(Recorded {
                request: req.clone(),
                visible_at_ms: visible,
                completed_at_ms: completed,
            });
        }
        self.inner.store(req, outcome, visible, completed)
    }
}

/// The requests a session sends under permission-mode (as priced against `ideal`).
pub fn requests_of(session: &Session) -> Vec<Recorded> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut recorder = Recorder {
        inner: cache::build("ideal", &PriceTable::bundled()).expect("ideal exists"),
        seen: seen.clone(),
    };
    engine::replay(
        session,
        &PermissionMode,
        &mut recorder,
        &ReplayEnv::default(),
    )
    .expect("the session replays");
    let out = seen.lock().expect("not poisoned").clone();
    out
}

/// Tokens each request adds over the longest prefix it shares with the previous one: the work a
/// cache model cannot avoid.
pub fn new_tokens(requests: &[Recorded]) -> Vec<Vec<u32>> {
    let mut prev: Vec<u32> = Vec::new();
    requests
        .iter()
        .map(|r| {
            let cur: Vec<u32> = r.request.tokens().collect();
            let shared = cur.iter().zip(&prev).take_while(|(a, b)| a == b).count();
            let fresh = cur[shared..].to_vec();
            prev = cur;
            fresh
        })
        .collect()
}
