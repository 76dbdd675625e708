//! Exports the token ids the cache models see, request by request, for the engine cross-check
//! in `scripts/engine-crosscheck/` (which replays them through vLLM's and SGLang's own cache
//! code and compares the cached tokens with plancache's `paged` and `radix`).
//!
//! ```sh
//! cargo run --release --example export_tokens -- --sessions 200 --out /tmp/xcheck
//! cargo run --release --example export_tokens -- --sessions 200 --out DIR --radix-no-last-token
//! ```
//!
//! Sessions are generated (`plancache generate` with small sizes, seeds 1..=N) and replayed
//! under `permission-mode`. Every second session gives its replies reasoning tokens; every
//! fourth launches two Explore subagents (concurrent streams); every third of the others runs on
//! a KV pool small enough to evict. One JSONL file per session, `session-NNNN.jsonl`: a first line with
//! the cache configuration, then one line per request in send order:
//!
//! ```json
//! {"index":0,"stream":"main","model":"claude-sonnet-4-5","sent_at_ms":0,"visible_at_ms":812,
//!  "completed_at_ms":2950,"prompt":[...],"reply":[...],"reasoning":120,
//!  "plancache":{"paged":0,"radix":0}}
//! ```
//!
//! `reasoning` is a count: the reasoning tokens never reappear in a prompt, so any ids unique to
//! the request stand for them (plancache numbers them from `REASONING_BASE` up).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use plancache::cache::{
    self, CacheConfig, CacheModel, CacheOutcome, PagedCache, PagedConfig, PriceTable, RadixCache,
    RadixConfig,
};
use plancache::engine::{self, ReplayEnv};
use plancache::prompt::{Encoding, Request, Tokenizer};
use plancache::scenario::generate::{generate, to_toml, GeneratorParams, TokenRange};
use plancache::scenario::{Scenario, Session, Step};
use plancache::strategy::PermissionMode;

struct Args {
    sessions: u64,
    first_seed: u64,
    out: PathBuf,
    cache_last_token: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: export_tokens --out DIR [--sessions N (200)] [--first-seed S (1)] [--radix-no-last-token]"
    );
    std::process::exit(2);
}

fn parse_args() -> Args {
    let mut a = Args {
        sessions: 200,
        first_seed: 1,
        out: PathBuf::new(),
        cache_last_token: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = |name: &str| -> u64 {
            let v = it.next().unwrap_or_else(|| usage());
            v.parse().unwrap_or_else(|_| {
                eprintln!("export_tokens: {name} wants a whole number, got `{v}`");
                std::process::exit(2);
            })
        };
        match flag.as_str() {
            "--sessions" => a.sessions = num("--sessions"),
            "--first-seed" => a.first_seed = num("--first-seed"),
            "--out" => a.out = PathBuf::from(it.next().unwrap_or_else(|| usage())),
            "--radix-no-last-token" => a.cache_last_token = false,
            _ => usage(),
        }
    }
    if a.out.as_os_str().is_empty() {
        usage();
    }
    a
}

/// splitmix64: the same small deterministic stream the generator uses.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Small generated sessions, so the Python replay stays quick.
fn params(seed: u64) -> GeneratorParams {
    let r = |k: u64, lo: u64, hi: u64| lo + mix(seed * 31 + k) % (hi - lo + 1);
    GeneratorParams {
        seed,
        name: Some(format!("xcheck-{seed}")),
        plan_model: None,
        tools: 12,
        tool_tokens: r(1, 2200, 3200) as u32,
        system_tokens: r(2, 500, 1500) as u32,
        context_tokens: r(3, 0, 400) as u32,
        exploration_rounds: r(4, 3, 12) as u32,
        max_parallel_calls: r(5, 1, 3) as u32,
        result_tokens: TokenRange::new(20, r(6, 100, 700) as u32),
        reply_tokens: TokenRange::new(1, r(7, 20, 160) as u32),
        plan_tokens: r(8, 100, 400) as u32,
        rejections: r(9, 0, 1) as u32,
        implementation_turns: r(10, 2, 8) as u32,
        subagents: if seed % 4 == 1 { 2 } else { 0 },
        subagent_rounds: 3,
        subagent_system_tokens: r(11, 200, 600) as u32,
        ..GeneratorParams::default()
    }
}

/// Gives every assistant turn of every second session reasoning tokens (0 to 300, some none).
fn add_reasoning(scenario: &mut Scenario, seed: u64) {
    if seed % 2 == 1 {
        return;
    }
    let mut k = 0u64;
    fn walk(steps: &mut [Step], seed: u64, k: &mut u64) {
        for step in steps {
            match step {
                Step::Assistant(turn) => {
                    *k += 1;
                    let draw = mix(seed ^ (*k << 20)) % 400;
                    turn.reasoning_tokens = if draw >= 300 { 0 } else { draw as u32 + 1 };
                }
                Step::Agents(agents) => {
                    for a in agents {
                        walk(&mut a.steps, seed, k);
                    }
                }
                _ => {}
            }
        }
    }
    walk(&mut scenario.steps, seed, &mut k);
}

/// One request as the engine sent it, with the times the cache model was told.
struct Recorded {
    request: Request,
    visible: u64,
    completed: u64,
}

/// Wraps a cache model and keeps every request it is asked to store.
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
                visible,
                completed,
            });
        }
        self.inner.store(req, outcome, visible, completed)
    }
}

fn ids(out: &mut String, tokens: impl Iterator<Item = u32>) {
    out.push('[');
    for (i, t) in tokens.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{t}");
    }
    out.push(']');
}

fn export(seed: u64, args: &Args, dir: &Path) -> Result<(usize, usize), String> {
    let mut scenario = generate(&params(seed));
    add_reasoning(&mut scenario, seed);
    let text = to_toml(&scenario).map_err(|e| format!("seed {seed}: {e}"))?;
    let session = Session::new(
        scenario,
        Path::new("generated.toml"),
        &text,
        Arc::new(Tokenizer::new(Encoding::O200kBase)),
    )
    .map_err(|e| format!("seed {seed}: {e}"))?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut recorder = Recorder {
        inner: cache::build("ideal", &PriceTable::bundled())?,
        seen: seen.clone(),
    };
    engine::replay(
        &session,
        &PermissionMode,
        &mut recorder,
        &ReplayEnv::default(),
    )
    .map_err(|e| format!("seed {seed}: {e:?}"))?;
    let recorded = std::mem::take(&mut *seen.lock().map_err(|_| "poisoned")?);
    // Pool: the default, or (every third session) 1.5x the largest request, so it evicts.
    let defaults = CacheConfig::default();
    let largest = recorded
        .iter()
        .map(|r| r.request.prompt_tokens() as usize + r.request.output_tokens as usize)
        .max()
        .unwrap_or(0);
    // Concurrent subagent sessions keep the default pool: three running requests could not fit.
    let small = seed % 3 == 0 && seed % 4 != 1;
    let paged_cfg = PagedConfig {
        capacity_blocks: if small {
            largest * 3 / 2 / 16 + 8
        } else {
            defaults.paged.capacity_blocks
        },
        ..defaults.paged.clone()
    };
    let radix_cfg = RadixConfig {
        capacity_tokens: if small {
            largest * 3 / 2
        } else {
            defaults.radix.capacity_tokens
        },
        cache_last_token: args.cache_last_token,
        ..defaults.radix.clone()
    };
    let mut paged = PagedCache::new(paged_cfg.clone());
    let mut radix = RadixCache::new(radix_cfg.clone());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{{\"session\":{seed},\"block_size\":{},\"capacity_blocks\":{},\"page_size\":{},\"capacity_tokens\":{},\"cache_last_token\":{},\"reasoning_base\":{}}}",
        paged_cfg.block_size,
        paged_cfg.capacity_blocks,
        radix_cfg.page_size,
        radix_cfg.capacity_tokens,
        radix_cfg.cache_last_token,
        cache::REASONING_BASE
    );
    for (i, r) in recorded.iter().enumerate() {
        let q = &r.request;
        let p = paged.lookup(q);
        paged.store(q, &p, r.visible, r.completed);
        let x = radix.lookup(q);
        radix.store(q, &x, r.visible, r.completed);
        let _ = write!(
            out,
            "{{\"index\":{i},\"stream\":{:?},\"model\":{:?},\"sent_at_ms\":{},\"visible_at_ms\":{},\"completed_at_ms\":{},\"prompt\":",
            q.stream, q.model, q.sent_at_ms, r.visible, r.completed
        );
        ids(&mut out, q.tokens());
        out.push_str(",\"reply\":");
        ids(
            &mut out,
            q.reply.iter().flat_map(|s| s.tokens.iter().copied()),
        );
        let _ = writeln!(
            out,
            ",\"reasoning\":{},\"plancache\":{{\"paged\":{},\"radix\":{}}}}}",
            cache::reasoning_tokens(q),
            p.cached_tokens,
            x.cached_tokens
        );
    }
    let path = dir.join(format!("session-{seed:04}.jsonl"));
    plancache::export::write_atomic(&path, out.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((recorded.len(), largest))
}

fn main() {
    let args = parse_args();
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("{}: cannot create: {e}", args.out.display());
        std::process::exit(2);
    }
    let mut requests = 0;
    for seed in args.first_seed..args.first_seed + args.sessions {
        match export(seed, &args, &args.out) {
            Ok((n, _)) => requests += n,
            Err(e) => {
                eprintln!("export_tokens: {e}");
                std::process::exit(2);
            }
        }
    }
    println!(
        "wrote {} sessions, {requests} requests, to {}",
        args.sessions,
        args.out.display()
    );
}
