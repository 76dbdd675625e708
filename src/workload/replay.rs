//! One workload replay: every session's requests on one clock, against one cache.
//!
//! Engines (`paged`, `radix`) are one pool shared by every session: all requests go on one
//! [`Schedule`], replayed single-threaded in time order, so the run is deterministic. Provider
//! caches are per account: each session has its own cache instance, so sessions are
//! independent and replayed in parallel (rayon); results are gathered in input order, so the
//! output does not depend on the thread count. `ideal` and the other models are per session too
//! (trace ids are local, so sessions never share content).

use std::time::Duration;

use rayon::prelude::*;

use super::{session_requests, BuildOptions, RequestRef};
use crate::cache::{self, BreakReason, CacheConfig, CacheOutcome, PriceTable};
use crate::engine::schedule::{Schedule, Timed};
use crate::prompt::Ttl;
use crate::trace::Trace;

/// Tokens per block of `--kv-blocks` (vLLM's default `--block-size`); `radix` gets the same
/// number of tokens.
pub const KV_BLOCK_TOKENS: u64 = 16;

/// Why a workload could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The cache model or one of its parameters is not valid.
    #[error("--cache {cache}: {detail}")]
    Cache {
        /// The `--cache` value as given.
        cache: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A request names a model the price table does not know.
    #[error("{trace}: stream {stream}, request {request}: {detail} (hint: serve every request on a priced model with --model, or add it with --pricing FILE)")]
    Price {
        /// The trace file.
        trace: String,
        /// The stream's name.
        stream: String,
        /// Index of the request within its stream.
        request: usize,
        /// What the price table says (the unknown model, with a did-you-mean).
        detail: String,
    },
    /// A `--kv-model` no row of the KV table has.
    #[error("--kv-model {name}: unknown; known models: {}", super::kv::KV_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "))]
    KvModel {
        /// The name given.
        name: String,
    },
    /// An `--arrivals` that is not valid.
    #[error("--arrivals {spec}: expected `recorded`, `poisson:RATE` (sessions per second, e.g. poisson:0.05) or `concurrency:N`")]
    Arrivals {
        /// As given.
        spec: String,
    },
    /// A `-L` curve axis that is not valid.
    #[error("-L {spec}: {what} (expected kv-blocks=1k..1M (or a list 1k,4k,16k), ttl=5m,1h or keepalive=off,4m30s)")]
    Axis {
        /// As given.
        spec: String,
        /// The mistake.
        what: String,
    },
}

/// One cache to replay the workload against.
#[derive(Debug, Clone)]
pub struct CacheSpec {
    /// Registered cache model name.
    pub name: String,
    /// Its parameters (capacity, TTLs).
    pub config: CacheConfig,
}

/// Whether a cache model is one pool shared by every session (a serving engine).
pub fn is_engine(name: &str) -> bool {
    matches!(name, "paged" | "radix")
}

impl CacheSpec {
    /// `name` with its default parameters.
    pub fn new(name: &str) -> Result<CacheSpec, WorkloadError> {
        if cache::registry::entry(name).is_none() {
            return Err(WorkloadError::Cache {
                cache: name.into(),
                detail: format!("unknown; known models: {}", cache::CACHE_NAMES.join(", ")),
            });
        }
        Ok(CacheSpec {
            name: name.into(),
            config: CacheConfig::default(),
        })
    }

    /// Sets an engine's pool to `blocks` blocks of [`KV_BLOCK_TOKENS`] (`None`: unbounded).
    pub fn with_kv_blocks(mut self, blocks: Option<u64>) -> CacheSpec {
        let blocks = blocks.unwrap_or(u32::MAX as u64);
        self.config.paged.capacity_blocks = blocks as usize;
        self.config.radix.capacity_tokens = blocks.saturating_mul(KV_BLOCK_TOKENS) as usize;
        self
    }

    /// Sets a provider cache's TTL: Anthropic-style caches write that class (`5m`, `1h`; another
    /// duration becomes the lifetime of the `5m` class); OpenAI's idle TTL is set to it.
    pub fn with_ttl(mut self, ttl: Duration) -> Result<CacheSpec, WorkloadError> {
        let class = if ttl == Duration::from_secs(3600) {
            Ttl::OneHour
        } else {
            Ttl::FiveMinutes
        };
        let c = &mut self.config;
        let bp = match self.name.as_str() {
            "anthropic" => &mut c.anthropic,
            "anthropic-auto" => &mut c.anthropic_auto,
            "bedrock" => &mut c.bedrock,
            "openai" => {
                c.openai.idle_ttl = ttl;
                return Ok(self);
            }
            other => {
                return Err(WorkloadError::Cache {
                    cache: other.into(),
                    detail: "a TTL applies to anthropic, anthropic-auto, bedrock and openai".into(),
                })
            }
        };
        bp.system_ttl = class;
        bp.message_ttl = class;
        bp.subagent_message_ttl = None;
        if class == Ttl::FiveMinutes {
            bp.ttl_5m = ttl;
        }
        Ok(self)
    }
}

/// One request's result.
#[derive(Debug, Clone)]
pub struct Priced {
    /// Which request it is.
    pub at: RequestRef,
    /// What the cache did.
    pub outcome: CacheOutcome,
    /// Output tokens billed.
    pub output_tokens: u64,
    /// Its cost in USD.
    pub cost_usd: f64,
}

impl Priced {
    /// The reuse stopped at an entry the cache evicted for room.
    pub fn evicted(&self) -> bool {
        matches!(&self.outcome.stop, Some(s) if s.reason == BreakReason::Evicted)
    }
}

/// Replays every session against `spec`; results in (session, stream, request) order.
pub fn run(
    traces: &[Trace],
    starts: &[u64],
    spec: &CacheSpec,
    opts: &BuildOptions,
    prices: &PriceTable,
) -> Result<Vec<Priced>, WorkloadError> {
    let hidden = indicatif::ProgressBar::hidden();
    run_with_progress(traces, starts, spec, opts, prices, &hidden)
}

/// [`run`], advancing `bar` by one per session replayed (a shared pool: as its sessions' last
/// requests are replayed).
pub fn run_with_progress(
    traces: &[Trace],
    starts: &[u64],
    spec: &CacheSpec,
    opts: &BuildOptions,
    prices: &PriceTable,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Priced>, WorkloadError> {
    let build = || {
        cache::build_with(&spec.name, prices, &spec.config).map_err(|detail| WorkloadError::Cache {
            cache: spec.name.clone(),
            detail: detail.to_string(),
        })
    };
    build()?;
    if is_engine(&spec.name) {
        let all = pool_requests(traces, starts, opts);
        return replay_one(traces, all, build()?.as_mut(), prices, bar);
    }
    let stream0 = first_streams(traces);
    let opts = BuildOptions {
        shared_pool: false,
        ..opts.clone()
    };
    let per: Vec<Result<Vec<Priced>, WorkloadError>> = (0..traces.len())
        .into_par_iter()
        .map(|i| {
            let timed = session_requests(&traces[i], i, starts[i], stream0[i], &opts);
            replay_one(traces, timed, build()?.as_mut(), prices, bar)
        })
        .collect();
    let mut out = Vec::new();
    for r in per {
        out.extend(r?);
    }
    Ok(out)
}

/// An engine's pool and its `twin` (the same engine with another pool size, such as the
/// unbounded one) on the same requests, as [`run_engines`] replays them. The results are those
/// of two [`run_with_progress`] calls.
pub fn run_engine_pair(
    traces: &[Trace],
    starts: &[u64],
    (spec, twin): (&CacheSpec, &CacheSpec),
    opts: &BuildOptions,
    prices: &PriceTable,
    bar: &indicatif::ProgressBar,
) -> Result<(Vec<Priced>, Vec<Priced>), WorkloadError> {
    let mut both = run_engines(traces, starts, &[spec, twin], opts, prices, bar)?;
    let b = both.pop().unwrap_or_default();
    let a = both.pop().unwrap_or_default();
    Ok((a, b))
}

/// Engines (`paged`, `radix`, each with its own pool size) on the same requests, such as the
/// points of a capacity curve: the requests are built once and shared (their segments and
/// tokens are `Arc`s), and the pools replay in parallel, one per core (each pool is still
/// replayed single-threaded, in time order). The results, in the order of `specs`, are those of
/// one [`run_with_progress`] call each (none, and no request built, for no engine).
pub fn run_engines(
    traces: &[Trace],
    starts: &[u64],
    specs: &[&CacheSpec],
    opts: &BuildOptions,
    prices: &PriceTable,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Vec<Priced>>, WorkloadError> {
    if let Some(spec) = specs.iter().find(|s| !is_engine(&s.name)) {
        return Err(WorkloadError::Cache {
            cache: spec.name.clone(),
            detail: "replays sharing their requests are engines (paged, radix)".into(),
        });
    }
    let build = |spec: &CacheSpec| {
        cache::build_with(&spec.name, prices, &spec.config).map_err(|detail| WorkloadError::Cache {
            cache: spec.name.clone(),
            detail: detail.to_string(),
        })
    };
    for spec in specs {
        build(spec)?;
    }
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let all = pool_requests(traces, starts, opts);
    // Each replay makes its pool and takes a copy of the requests as it starts, and drops both
    // once done: one of each per replay running at a time.
    let out: Vec<_> = specs
        .par_iter()
        .map(|spec| replay_one(traces, all.clone(), build(spec)?.as_mut(), prices, bar))
        .collect();
    out.into_iter().collect()
}

/// Every session's requests on one shared pool, in (session, stream, request) order; the
/// sessions are built in parallel (each is independent; the order is the input order).
fn pool_requests(
    traces: &[Trace],
    starts: &[u64],
    opts: &BuildOptions,
) -> Vec<(RequestRef, Timed)> {
    let stream0 = first_streams(traces);
    let opts = BuildOptions {
        shared_pool: true,
        ..opts.clone()
    };
    let per: Vec<Vec<(RequestRef, Timed)>> = (0..traces.len())
        .into_par_iter()
        .map(|i| session_requests(&traces[i], i, starts[i], stream0[i], &opts))
        .collect();
    per.into_iter().flatten().collect()
}

/// The workload-wide index of each session's first stream.
fn first_streams(traces: &[Trace]) -> Vec<usize> {
    let mut stream0 = vec![0; traces.len()];
    for i in 1..traces.len() {
        stream0[i] = stream0[i - 1] + traces[i - 1].streams.len();
    }
    stream0
}

/// Replays `requests` on one schedule against `cache` and prices each.
fn replay_one(
    traces: &[Trace],
    requests: Vec<(RequestRef, Timed)>,
    cache: &mut dyn cache::CacheModel,
    prices: &PriceTable,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Priced>, WorkloadError> {
    let mut schedule = Schedule::new();
    let mut meta = Vec::with_capacity(requests.len());
    // Requests left per session, and each (workload-wide) stream's session: the bar moves on
    // as a session's last request is replayed.
    let mut left: Vec<u64> = Vec::new();
    let mut session_of = std::collections::HashMap::new();
    for (at, t) in requests {
        if left.len() <= at.session {
            left.resize(at.session + 1, 0);
        }
        left[at.session] += 1;
        session_of.insert(t.stream, at.session);
        meta.push((at, t.request.model.clone(), t.request.output_tokens));
        schedule.push(t);
    }
    let charges = cache.charges_writes();
    let outcomes = schedule.run_with(cache, |t, req, _| {
        if let Some(&s) = session_of.get(&t.stream) {
            left[s] -= 1;
            if left[s] == 0 {
                bar.inc(1);
            }
        }
        req
    });
    meta.into_iter()
        .zip(outcomes)
        .map(|((at, model, output_tokens), outcome)| {
            let price = prices.resolve(&model).ok_or_else(|| {
                let t = &traces[at.session];
                WorkloadError::Price {
                    trace: t.file.display().to_string(),
                    stream: t.streams[at.stream].name.clone(),
                    request: at.request,
                    detail: prices.unknown_model(&model),
                }
            })?;
            let cost_usd = price.cost_billed(&outcome, output_tokens, charges);
            Ok(Priced {
                at,
                outcome,
                output_tokens,
                cost_usd,
            })
        })
        .collect()
}

/// Totals over a set of requests (one session, or the whole workload).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Requests of the traces (keep-alive pings not counted).
    pub requests: u64,
    /// Keep-alive pings sent.
    pub pings: u64,
    /// Prompt tokens of the trace requests.
    pub prompt_tokens: u64,
    /// Of those, read from the cache.
    pub cached_tokens: u64,
    /// Of those, stored for later.
    pub cache_write_tokens: u64,
    /// Cost in USD, pings included.
    pub cost_usd: f64,
    /// Requests whose reuse stopped at an evicted entry.
    pub evicted_requests: u64,
}

impl Totals {
    /// Adds one request.
    pub fn add(&mut self, p: &Priced) {
        self.cost_usd += p.cost_usd;
        if p.at.ping {
            self.pings += 1;
            return;
        }
        self.requests += 1;
        self.prompt_tokens += p.outcome.prompt_tokens;
        self.cached_tokens += p.outcome.cached_tokens;
        self.cache_write_tokens += p.outcome.cache_write_tokens();
        self.evicted_requests += p.evicted() as u64;
    }

    /// Prompt tokens prefilled again.
    pub fn recomputed_tokens(&self) -> u64 {
        self.prompt_tokens - self.cached_tokens
    }

    /// Cached over prompt tokens.
    pub fn hit_rate(&self) -> f64 {
        if self.prompt_tokens == 0 {
            0.0
        } else {
            self.cached_tokens as f64 / self.prompt_tokens as f64
        }
    }
}

/// Totals per session (input order) and over the workload.
pub fn totals(n_sessions: usize, results: &[Priced]) -> (Vec<Totals>, Totals) {
    let mut per = vec![Totals::default(); n_sessions];
    let mut all = Totals::default();
    for p in results {
        per[p.at.session].add(p);
        all.add(p);
    }
    (per, all)
}
