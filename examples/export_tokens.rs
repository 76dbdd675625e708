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
//!
//! Shared-pool mode (several sessions on one KV pool, the serving case): one file per pool,
//! `pool-NNNN.jsonl`, the same lines, every request of every session in one global send order
//! (the order of `engine::schedule::Schedule`, which `workload` replays), streams named
//! `SESSION/STREAM`, and the predictions of one `paged` and one `radix` instance for the pool.
//!
//! ```sh
//! # generated sessions, 4 per pool, staggered starts; every second pool holds 3x the largest request
//! cargo run --release --example export_tokens -- --pool 4 --sessions 200 --out /tmp/xpool
//! # block-hash traces (kv-cache-tester / Mooncake) on one pool of N 16-token blocks
//! cargo run --release --example export_tokens -- --traces DIR_OR_FILE... --kv-blocks N \
//!     [--arrivals recorded|poisson:RATE|concurrency:N] --out /tmp/xtraces
//! ```
//!
//! In trace mode the predictions are checked against `workload::replay::run` (what
//! `plancache workload --cache paged|radix --kv-blocks N` reports) request by request, and the
//! requests whose reuse stopped at an evicted block are counted per model.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use plancache::cache::{
    self, CacheConfig, CacheModel, CacheOutcome, PagedCache, PagedConfig, PriceTable, RadixCache,
    RadixConfig,
};
use plancache::engine::schedule::{Schedule, Timed};
use plancache::engine::{self, ReplayEnv};
use plancache::prompt::{Encoding, Request, Tokenizer};
use plancache::scenario::generate::{generate, to_toml, GeneratorParams, TokenRange};
use plancache::scenario::{Scenario, Session, Step};
use plancache::strategy::PermissionMode;
use plancache::workload::{self, Arrivals};

struct Args {
    sessions: u64,
    first_seed: u64,
    out: PathBuf,
    cache_last_token: bool,
    /// Generated sessions per shared pool (0: one session per file).
    pool: u64,
    /// Block-hash traces (files or folders) replayed on one pool.
    traces: Vec<PathBuf>,
    /// Pool size in 16-token blocks for the trace mode.
    kv_blocks: Option<u64>,
    arrivals: Arrivals,
    seed: u64,
}

fn usage() -> ! {
    eprintln!(
        "usage: export_tokens --out DIR [--sessions N (200)] [--first-seed S (1)] [--radix-no-last-token]\n       \
         [--pool K (generated sessions per shared pool)]\n       \
         [--traces PATH... --kv-blocks N [--arrivals recorded|poisson:RATE|concurrency:N] [--seed S]]"
    );
    std::process::exit(2);
}

fn parse_args() -> Args {
    let mut a = Args {
        sessions: 200,
        first_seed: 1,
        out: PathBuf::new(),
        cache_last_token: true,
        pool: 0,
        traces: Vec::new(),
        kv_blocks: None,
        arrivals: Arrivals::Recorded,
        seed: 1,
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
            "--pool" => a.pool = num("--pool"),
            "--kv-blocks" => a.kv_blocks = Some(num("--kv-blocks")),
            "--seed" => a.seed = num("--seed"),
            "--traces" => a
                .traces
                .push(PathBuf::from(it.next().unwrap_or_else(|| usage()))),
            "--arrivals" => {
                let v = it.next().unwrap_or_else(|| usage());
                a.arrivals = Arrivals::parse(&v).unwrap_or_else(|e| {
                    eprintln!("export_tokens: {e}");
                    std::process::exit(2);
                });
            }
            _ => usage(),
        }
    }
    if a.out.as_os_str().is_empty() || (!a.traces.is_empty() && a.kv_blocks.is_none()) {
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

/// Replays generated session `seed` under `permission-mode` and returns its requests as the
/// engine sent them (an `ideal` cache underneath: the requests do not depend on the model).
fn record(seed: u64) -> Result<Vec<Recorded>, String> {
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
        inner: cache::build("ideal", &PriceTable::bundled()).map_err(|e| e.to_string())?,
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
    Ok(recorded)
}

fn largest(requests: &[Recorded]) -> usize {
    requests
        .iter()
        .map(|r| r.request.prompt_tokens() as usize + r.request.output_tokens as usize)
        .max()
        .unwrap_or(0)
}

/// The pool of `paged` (blocks) and `radix` (tokens): the default, or `small` tokens.
fn configs(small: Option<usize>, args: &Args) -> (PagedConfig, RadixConfig) {
    let defaults = CacheConfig::default();
    let paged = PagedConfig {
        capacity_blocks: small.map_or(defaults.paged.capacity_blocks, |t| t / 16 + 8),
        ..defaults.paged.clone()
    };
    let radix = RadixConfig {
        capacity_tokens: small.unwrap_or(defaults.radix.capacity_tokens),
        cache_last_token: args.cache_last_token,
        ..defaults.radix.clone()
    };
    (paged, radix)
}

/// Both engine models of one pool, behind one `CacheModel` so a [`Schedule`] drives them in
/// its order; every request stored is kept with both predictions.
struct Both {
    paged: PagedCache,
    radix: RadixCache,
    /// The `radix` outcome of the request being sent (between its lookup and its store).
    pending: Option<CacheOutcome>,
    rows: Vec<(Recorded, u64, u64)>,
}

impl CacheModel for Both {
    fn name(&self) -> &str {
        "paged+radix"
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        self.pending = Some(self.radix.lookup(req));
        self.paged.lookup(req)
    }
    fn store(&mut self, req: &Request, outcome: &CacheOutcome, visible: u64, completed: u64) {
        let x = self.pending.take().unwrap_or_default();
        self.paged.store(req, outcome, visible, completed);
        self.radix.store(req, &x, visible, completed);
        self.rows.push((
            Recorded {
                request: req.clone(),
                visible,
                completed,
            },
            outcome.cached_tokens,
            x.cached_tokens,
        ));
    }
}

/// Writes one file: the configuration line, then every request in the order given.
fn write_file(
    path: &Path,
    head: &str,
    paged_cfg: &PagedConfig,
    radix_cfg: &RadixConfig,
    rows: &[(Recorded, u64, u64)],
) -> Result<(), String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{{{head}\"block_size\":{},\"capacity_blocks\":{},\"page_size\":{},\"capacity_tokens\":{},\"cache_last_token\":{},\"reasoning_base\":{}}}",
        paged_cfg.block_size,
        paged_cfg.capacity_blocks,
        radix_cfg.page_size,
        radix_cfg.capacity_tokens,
        radix_cfg.cache_last_token,
        cache::REASONING_BASE
    );
    for (i, (r, paged, radix)) in rows.iter().enumerate() {
        let q = &r.request;
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
            ",\"reasoning\":{},\"plancache\":{{\"paged\":{paged},\"radix\":{radix}}}}}",
            cache::reasoning_tokens(q),
        );
    }
    plancache::export::write_atomic(path, out.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// One generated session alone on its pool.
fn export(seed: u64, args: &Args, dir: &Path) -> Result<usize, String> {
    let recorded = record(seed)?;
    // Pool: the default, or (every third session) 1.5x the largest request, so it evicts.
    // Concurrent subagent sessions keep the default pool: three running requests could not fit.
    let small = seed % 3 == 0 && seed % 4 != 1;
    let (paged_cfg, radix_cfg) = configs(small.then(|| largest(&recorded) * 3 / 2), args);
    let mut paged = PagedCache::new(paged_cfg.clone());
    let mut radix = RadixCache::new(radix_cfg.clone());
    let n = recorded.len();
    let rows: Vec<_> = recorded
        .into_iter()
        .map(|r| {
            let q = &r.request;
            let p = paged.lookup(q);
            paged.store(q, &p, r.visible, r.completed);
            let x = radix.lookup(q);
            radix.store(q, &x, r.visible, r.completed);
            (r, p.cached_tokens, x.cached_tokens)
        })
        .collect();
    let path = dir.join(format!("session-{seed:04}.jsonl"));
    write_file(
        &path,
        &format!("\"session\":{seed},"),
        &paged_cfg,
        &radix_cfg,
        &rows,
    )?;
    Ok(n)
}

/// Replays `timed` on one schedule against both engine models of one pool.
fn replay_pool(
    timed: Vec<Timed>,
    paged_cfg: &PagedConfig,
    radix_cfg: &RadixConfig,
) -> Vec<(Recorded, u64, u64)> {
    let mut schedule = Schedule::new();
    for t in timed {
        schedule.push(t);
    }
    let mut both = Both {
        paged: PagedCache::new(paged_cfg.clone()),
        radix: RadixCache::new(radix_cfg.clone()),
        pending: None,
        rows: Vec::new(),
    };
    schedule.run(&mut both);
    both.rows
}

/// Generated sessions `seeds` on one pool: each starts a seeded 0 to 90 s after the one
/// before, its streams named `sSEED/STREAM`. Every second pool holds three times the largest
/// request, so blocks of one session are evicted for another's.
fn export_pool(pool: u64, seeds: &[u64], args: &Args, dir: &Path) -> Result<usize, String> {
    let mut timed = Vec::new();
    let mut start = 0u64;
    let mut big = 0;
    for (k, &seed) in seeds.iter().enumerate() {
        if k > 0 {
            start += mix(seed ^ 0x5eed) % 90_000;
        }
        let recorded = record(seed)?;
        big = big.max(largest(&recorded));
        let mut streams: Vec<String> = Vec::new();
        for r in recorded {
            let mut request = r.request;
            let stream = match streams.iter().position(|s| *s == request.stream) {
                Some(i) => i,
                None => {
                    streams.push(request.stream.clone());
                    streams.len() - 1
                }
            };
            request.stream = format!("s{seed}/{}", request.stream);
            request.sent_at_ms += start;
            timed.push(Timed {
                stream: k * 64 + stream,
                sent_ms: request.sent_at_ms,
                request,
                visible_ms: r.visible + start,
                finished_ms: r.completed + start,
            });
        }
    }
    let (paged_cfg, radix_cfg) = configs((pool % 2 == 0).then_some(big * 3), args);
    let rows = replay_pool(timed, &paged_cfg, &radix_cfg);
    let head = format!(
        "\"pool\":{pool},\"sessions\":[{}],",
        seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    write_file(
        &dir.join(format!("pool-{pool:04}.jsonl")),
        &head,
        &paged_cfg,
        &radix_cfg,
        &rows,
    )?;
    Ok(rows.len())
}

/// Block-hash traces on one pool of `--kv-blocks` blocks, as `plancache workload` replays them;
/// the predictions are checked against `workload::replay::run` for both models.
fn export_traces(args: &Args, dir: &Path) -> Result<usize, String> {
    let mut traces = Vec::new();
    for p in &args.traces {
        traces.extend(plancache::trace::read_path(p).map_err(|e| e.to_string())?);
    }
    let starts = workload::starts(&traces, args.arrivals, args.seed);
    let blocks = args.kv_blocks.unwrap_or(u64::from(u32::MAX));
    let opts = workload::BuildOptions {
        shared_pool: true,
        ..Default::default()
    };
    let mut timed = Vec::new();
    let mut stream0 = 0;
    for (i, t) in traces.iter().enumerate() {
        timed.extend(
            workload::session_requests(t, i, starts[i], stream0, &opts)
                .into_iter()
                .map(|(_, t)| t),
        );
        stream0 += t.streams.len();
    }
    let pool = |name: &str| {
        workload::replay::CacheSpec::new(name)
            .map(|s| s.with_kv_blocks(Some(blocks)).config)
            .map_err(|e| e.to_string())
    };
    let paged_cfg = pool("paged")?.paged;
    let radix_cfg = RadixConfig {
        cache_last_token: args.cache_last_token,
        ..pool("radix")?.radix
    };
    let rows = replay_pool(timed, &paged_cfg, &radix_cfg);
    // The same figures `plancache workload --cache paged|radix` reports, request by request.
    let by_request: std::collections::HashMap<(&str, usize), (u64, u64)> = rows
        .iter()
        .map(|(r, p, x)| ((r.request.stream.as_str(), r.request.step), (*p, *x)))
        .collect();
    let prices = PriceTable::bundled();
    for name in ["paged", "radix"] {
        let config = CacheConfig {
            paged: paged_cfg.clone(),
            radix: radix_cfg.clone(),
            ..Default::default()
        };
        let spec = workload::replay::CacheSpec {
            name: name.to_string(),
            config,
        };
        let got = workload::replay::run(&traces, &starts, &spec, &opts, &prices)
            .map_err(|e| e.to_string())?;
        let evicted = got.iter().filter(|p| p.evicted()).count();
        println!(
            "{name}: {} requests, {evicted} whose reuse stopped at a block evicted for room",
            got.len()
        );
        for p in &got {
            let t = &traces[p.at.session];
            let stream = format!("{}/{}", t.id, t.streams[p.at.stream].name);
            let mine = by_request.get(&(stream.as_str(), p.at.request));
            let mine = mine.map(|&(paged, radix)| if name == "paged" { paged } else { radix });
            if mine != Some(p.outcome.cached_tokens) {
                return Err(format!(
                    "{name}: {stream} request {}: exported {mine:?}, `workload` {}",
                    p.at.request, p.outcome.cached_tokens
                ));
            }
        }
    }
    let names: Vec<String> = traces.iter().map(|t| format!("{:?}", t.id)).collect();
    let head = format!(
        "\"traces\":[{}],\"arrivals\":{:?},",
        names.join(","),
        format!("{:?}", args.arrivals)
    );
    write_file(
        &dir.join("pool-traces.jsonl"),
        &head,
        &paged_cfg,
        &radix_cfg,
        &rows,
    )?;
    Ok(rows.len())
}

fn main() {
    let args = parse_args();
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("{}: cannot create: {e}", args.out.display());
        std::process::exit(2);
    }
    let fail = |e: String| -> ! {
        eprintln!("export_tokens: {e}");
        std::process::exit(2);
    };
    let seeds: Vec<u64> = (args.first_seed..args.first_seed + args.sessions).collect();
    let (files, requests) = if !args.traces.is_empty() {
        (
            1,
            export_traces(&args, &args.out).unwrap_or_else(|e| fail(e)),
        )
    } else if args.pool > 0 {
        let mut n = 0;
        let chunks = seeds.chunks(args.pool as usize);
        let files = chunks.len();
        for (i, chunk) in chunks.enumerate() {
            n += export_pool(i as u64 + 1, chunk, &args, &args.out).unwrap_or_else(|e| fail(e));
        }
        (files, n)
    } else {
        let mut n = 0;
        for &seed in &seeds {
            n += export(seed, &args, &args.out).unwrap_or_else(|e| fail(e));
        }
        (seeds.len(), n)
    };
    println!(
        "wrote {files} files, {requests} requests, to {}",
        args.out.display()
    );
}
