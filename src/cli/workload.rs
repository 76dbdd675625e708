//! `plancache workload`: many sessions of block-hash traces on one cache, and `import trace`.

use super::common::PricingArgs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::CliError;
use plancache::cache::PriceTable;
use plancache::export::write_atomic;
use plancache::sweep::Shard;
use plancache::trace::{self, Trace, TraceKind};
use plancache::workload::curve::{self, Axis, CurveChart, Point};
use plancache::workload::replay::{self, is_engine, CacheSpec, Totals};
use plancache::workload::{kv, starts, Arrivals, BuildOptions};

/// Replay every trace of the directories as one arrival stream against one cache per model.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache workload tests/fixtures/traces/kv-cache-tester/traces --cache paged --kv-blocks 64k
  plancache workload traces/ --cache radix --kv-gib 16 --kv-model llama-3.1-8b --arrivals poisson:0.01
  plancache workload traces/ --cache paged -L kv-blocks=1k..1M --out curve/
  plancache workload traces/ --cache anthropic -L ttl=5m,1h -L keepalive=off,4m30s --out ttl/

Engines (paged, radix) are one pool shared by every session; provider caches are one per
session (account). CSV files and charts go to --out; docs/workloads.md explains the columns.")]
pub struct WorkloadArgs {
    /// Trace files or directories (kv-cache-tester JSON, Mooncake JSONL).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The traces' kind: kv-cache-tester or mooncake (default: detected per file).
    #[arg(long, value_name = "KIND", value_parser = super::common::kind_parser())]
    pub kind: Option<String>,
    /// Cache models, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "paged")]
    pub cache: Vec<String>,
    /// Engine pool size in blocks of 16 tokens (`64k`, `1M`); default: the model's own.
    #[arg(long, value_parser = parse_count, conflicts_with = "kv_gib")]
    pub kv_blocks: Option<u64>,
    /// Engine pool size as GiB of KV space for `--kv-model`.
    #[arg(long)]
    pub kv_gib: Option<f64>,
    /// Model whose KV bytes per token size `--kv-gib`: llama-3.1-70b, qwen3-32b, llama-3.1-8b,
    /// deepseek-v3, qwen2.5-7b.
    #[arg(long, default_value = "llama-3.1-8b")]
    pub kv_model: String,
    /// When sessions start: `recorded`, `poisson:RATE` (sessions per second) or
    /// `concurrency:N`.
    #[arg(long, default_value = "recorded", value_parser = Arrivals::parse)]
    pub arrivals: Arrivals,
    /// At most N sessions at once (the same as `--arrivals concurrency:N`).
    #[arg(long, conflicts_with = "arrivals")]
    pub concurrency: Option<usize>,
    /// Seed of the Poisson arrivals.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Serve every request on this model (default: the recorded one).
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Provider caches: the TTL written (`5m`, `1h`, or any duration).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub ttl: Option<Duration>,
    /// Keep-alive pings during idle gaps, every this long (`4m30s`; `off`: none).
    #[arg(long, value_name = "INTERVAL", value_parser = parse_keepalive)]
    pub keepalive: Option<Keepalive>,
    /// An axis: `kv-blocks=1k..1M` (log steps), `ttl=5m,1h`, `keepalive=off,4m30s` (repeatable;
    /// the grid is the cross product, as for `plancache sweep -L`; `--sweep` is the old spelling).
    #[arg(
        short = 'L',
        long = "parameter-list",
        alias = "sweep",
        value_name = "NAME=V1,V2"
    )]
    pub sweep: Vec<String>,
    /// Print one row per session, not only the totals.
    #[arg(long)]
    pub per_session: bool,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
    /// Directory for the CSV files and charts.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With -L: run only points I, I+N, ... (1-based) of the grid and write
    /// DIR/shard-I-of-N.csv for `plancache merge` (docs/scale-out.md).
    #[arg(long, value_parser = Shard::parse, requires = "sweep")]
    pub shard: Option<Shard>,
    /// With -L: shard $VAR+1 of N, the 0-based index read from the environment variable VAR
    /// (`JOB_COMPLETION_INDEX/4` in a Kubernetes indexed Job).
    #[arg(long, value_name = "VAR/N", value_parser = Shard::from_env, conflicts_with = "shard", requires = "sweep")]
    pub shard_env: Option<Shard>,
    /// No progress bar (it shows only when stderr is a terminal anyway).
    #[arg(short, long)]
    pub quiet: bool,
}

fn parse_count(s: &str) -> Result<u64, String> {
    match Axis::parse(&format!("kv-blocks={s}")) {
        Ok(Axis::KvBlocks(v)) if v.len() == 1 => Ok(v[0]),
        _ => Err(format!(
            "`{s}`: expected a block count such as 4096, 64k or 1M"
        )),
    }
}

/// A `--keepalive` value: the interval of the pings, `None` for `off`. (A newtype: clap reads
/// a bare `Option<Option<_>>` field as a flag whose value may be left out, and then panics on
/// the parser's `Option`.)
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Keepalive(pub Option<Duration>);

fn parse_keepalive(s: &str) -> Result<Keepalive, String> {
    if s == "off" {
        return Ok(Keepalive(None));
    }
    humantime::parse_duration(s)
        .map(|d| Keepalive(Some(d)))
        .map_err(|e| format!("`{s}`: {e} (expected `off` or a duration such as 4m30s)"))
}

fn input<E: std::fmt::Display>(e: E) -> CliError {
    CliError::input(e.to_string())
}

/// `--kind` of a command that reads block-hash traces: `None` (detected per file) or the kind.
fn trace_kind(kind: Option<&str>) -> Result<Option<TraceKind>, CliError> {
    kind.map(|k| match k {
        "kv-cache-tester" | "kvct" => Ok(TraceKind::KvCacheTester),
        "mooncake" => Ok(TraceKind::Mooncake),
        other => Err(CliError::input(format!(
            "--kind {other}: unknown trace kind\n  hint: use kv-cache-tester or mooncake (default: detected)"
        ))),
    })
    .transpose()
}

/// Reads every trace of `paths`, in order, each file as `kind` (`None`: detected).
fn read_all(paths: &[PathBuf], kind: Option<&str>) -> Result<Vec<Trace>, CliError> {
    let kind = trace_kind(kind)?;
    let mut all = Vec::new();
    for p in paths {
        all.extend(trace::read_path_as(p, kind).map_err(input)?);
    }
    if all.is_empty() {
        return Err(CliError::input(format!(
            "no trace found in {}\n  hint: give trace files or directories of *.json / *.jsonl traces",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(all)
}

/// The pool size `--kv-blocks` / `--kv-gib` ask for, in blocks.
fn kv_blocks(args: &WorkloadArgs) -> Result<Option<u64>, CliError> {
    match args.kv_gib {
        Some(g) if !(g.is_finite() && g > 0.0) => Err(CliError::input(format!(
            "--kv-gib {g}: must be a positive number"
        ))),
        Some(g) => {
            let m = kv::lookup(&args.kv_model).map_err(CliError::input)?;
            Ok(Some(kv::tokens_in(g, m) / replay::KV_BLOCK_TOKENS))
        }
        None => Ok(args.kv_blocks),
    }
}

/// Totals per session (input order) and over the workload.
type SessionTotals = (Vec<Totals>, Totals);

/// Everything one replay needs besides the cache.
struct Ctx {
    traces: Vec<Trace>,
    starts: Vec<u64>,
    opts: BuildOptions,
    prices: PriceTable,
}

impl Ctx {
    fn totals(
        &self,
        spec: &CacheSpec,
        bar: &indicatif::ProgressBar,
    ) -> Result<(Vec<Totals>, Totals), CliError> {
        let res = replay::run_with_progress(
            &self.traces,
            &self.starts,
            spec,
            &self.opts,
            &self.prices,
            bar,
        )
        .map_err(input)?;
        Ok(replay::totals(self.traces.len(), &res))
    }

    /// [`Ctx::totals`] of each engine's pool and of its unbounded twin, every pool on requests
    /// built once (see `replay::run_engines`), in the order of `engines`.
    fn totals_engines(
        &self,
        engines: &[&CacheSpec],
        bar: &indicatif::ProgressBar,
    ) -> Result<Vec<(SessionTotals, SessionTotals)>, CliError> {
        let twins: Vec<CacheSpec> = engines
            .iter()
            .map(|s| (*s).clone().with_kv_blocks(None))
            .collect();
        let pools: Vec<&CacheSpec> = engines
            .iter()
            .zip(&twins)
            .flat_map(|(s, t)| [*s, t])
            .collect();
        let res = replay::run_engines(
            &self.traces,
            &self.starts,
            &pools,
            &self.opts,
            &self.prices,
            bar,
        )
        .map_err(input)?;
        let n = self.traces.len();
        let mut res = res.into_iter().map(|r| replay::totals(n, &r));
        let mut out = Vec::with_capacity(engines.len());
        while let (Some(a), Some(b)) = (res.next(), res.next()) {
            out.push((a, b));
        }
        Ok(out)
    }
}

/// One cache's result: per session and overall, with the unbounded pool's for engines.
struct Row {
    cache: String,
    per: Vec<Totals>,
    all: Totals,
    unbounded: Option<(Vec<Totals>, Totals)>,
}

pub fn workload(args: WorkloadArgs) -> Result<(), CliError> {
    let traces = read_all(&args.paths, args.kind.as_deref())?;
    let arrivals = args.concurrency.map_or(Ok(args.arrivals), |n| {
        if n == 0 {
            Err(CliError::input("--concurrency 0: must be at least 1"))
        } else {
            Ok(Arrivals::Concurrency(n))
        }
    })?;
    let blocks = kv_blocks(&args)?;
    let prices = args.pricing.table()?;
    let ctx = Ctx {
        starts: starts(&traces, arrivals, args.seed),
        traces,
        opts: BuildOptions {
            model: args.model.clone(),
            keepalive_ms: args
                .keepalive
                .and_then(|k| k.0)
                .map(|d| d.as_millis() as u64),
            shared_pool: false,
        },
        prices,
    };
    let specs = specs(&args, blocks)?;
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)
            .map_err(|e| CliError::input(format!("--out {}: {e}", out.display())))?;
    }
    if !args.sweep.is_empty() {
        return sweep(&args, &ctx, &specs);
    }
    let mut rows = Vec::new();
    let replays = specs.len() + specs.iter().filter(|s| is_engine(&s.name)).count();
    let bar = progress(&args, (replays * ctx.traces.len()) as u64);
    // Every engine's pool and its unbounded twin (for the hit rate lost to capacity) replay on
    // requests built once, the pools in parallel.
    let engines: Vec<&CacheSpec> = specs.iter().filter(|s| is_engine(&s.name)).collect();
    let mut engine_totals = ctx.totals_engines(&engines, &bar)?.into_iter();
    for spec in &specs {
        let ((per, all), unbounded) = if is_engine(&spec.name) {
            let (bounded, unbounded) = engine_totals
                .next()
                .ok_or_else(|| CliError::input(format!("--cache {}: not replayed", spec.name)))?;
            (bounded, Some(unbounded))
        } else {
            (ctx.totals(spec, &bar)?, None)
        };
        rows.push(Row {
            cache: spec.name.clone(),
            per,
            all,
            unbounded,
        });
    }
    bar.finish_and_clear();
    print!("{}", table(&ctx, &rows, args.per_session));
    if let Some(out) = &args.out {
        write(
            &out.join("workload_sessions.csv"),
            &sessions_csv(&ctx, &rows)?,
        )?;
        write(&out.join("workload.csv"), &totals_csv(&rows)?)?;
    }
    Ok(())
}

fn specs(args: &WorkloadArgs, blocks: Option<u64>) -> Result<Vec<CacheSpec>, CliError> {
    args.cache
        .iter()
        .map(|name| {
            let mut spec = CacheSpec::new(name).map_err(input)?;
            if is_engine(name) {
                if let Some(b) = blocks {
                    spec = spec.with_kv_blocks(Some(b));
                }
            } else if let Some(t) = args.ttl {
                spec = spec.with_ttl(t).map_err(input)?;
            }
            Ok(spec)
        })
        .collect()
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    write_atomic(path, text.as_bytes()).map_err(CliError::input)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Points lost to capacity: the unbounded pool's hit rate minus this one's.
fn lost(t: &Totals, unbounded: Option<&Totals>) -> Option<f64> {
    unbounded.map(|u| u.hit_rate() - t.hit_rate())
}

fn line(name: &str, t: &Totals, unbounded: Option<&Totals>) -> String {
    format!(
        "{:<28} {:>6} {:>14} {:>14} {:>7} {:>11.2} {:>8} {:>7}\n",
        name,
        t.requests,
        t.prompt_tokens,
        t.recomputed_tokens(),
        pct(t.hit_rate()),
        t.cost_usd,
        unbounded.map_or("-".into(), |_| t.evicted_requests.to_string()),
        lost(t, unbounded).map_or("-".into(), |l| format!("{:.1}", l * 100.0)),
    )
}

fn table(ctx: &Ctx, rows: &[Row], per_session: bool) -> String {
    let head = format!(
        "{:<28} {:>6} {:>14} {:>14} {:>7} {:>11} {:>8} {:>7}\n",
        "cache / session", "reqs", "prompt", "recomputed", "hit", "cost_usd", "evicted", "lost_pt"
    );
    let mut out = format!(
        "{} sessions, {} streams, {} requests\n{head}",
        ctx.traces.len(),
        ctx.traces.iter().map(|t| t.streams.len()).sum::<usize>(),
        ctx.traces.iter().map(|t| t.request_count()).sum::<usize>()
    );
    for r in rows {
        out.push_str(&line(&r.cache, &r.all, r.unbounded.as_ref().map(|u| &u.1)));
        if per_session {
            for (i, t) in r.per.iter().enumerate() {
                let u = r.unbounded.as_ref().map(|u| &u.0[i]);
                out.push_str(&line(&format!("  {}", ctx.traces[i].id), t, u));
            }
        }
    }
    out
}

const COLUMNS: &[&str] = &[
    "requests",
    "pings",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "recomputed_tokens",
    "hit_rate",
    "cost_usd",
    "evicted_requests",
    "unbounded_hit_rate",
    "lost_hit_rate",
];

fn fields(t: &Totals, unbounded: Option<&Totals>) -> Vec<String> {
    vec![
        t.requests.to_string(),
        t.pings.to_string(),
        t.prompt_tokens.to_string(),
        t.cached_tokens.to_string(),
        t.cache_write_tokens.to_string(),
        t.recomputed_tokens().to_string(),
        format!("{:.6}", t.hit_rate()),
        format!("{:.6}", t.cost_usd),
        t.evicted_requests.to_string(),
        unbounded.map_or(String::new(), |u| format!("{:.6}", u.hit_rate())),
        lost(t, unbounded).map_or(String::new(), |l| format!("{l:.6}")),
    ]
}

fn csv_text(header: &[&str], rows: Vec<Vec<String>>) -> Result<String, CliError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(input)?;
    for r in rows {
        w.write_record(&r).map_err(input)?;
    }
    String::from_utf8(w.into_inner().map_err(input)?).map_err(input)
}

fn sessions_csv(ctx: &Ctx, rows: &[Row]) -> Result<String, CliError> {
    let header: Vec<&str> = ["cache", "session", "start_ms"]
        .into_iter()
        .chain(COLUMNS.iter().copied())
        .collect();
    let mut out = Vec::new();
    for r in rows {
        for (i, t) in r.per.iter().enumerate() {
            let mut f = vec![
                r.cache.clone(),
                ctx.traces[i].id.clone(),
                ctx.starts[i].to_string(),
            ];
            f.extend(fields(t, r.unbounded.as_ref().map(|u| &u.0[i])));
            out.push(f);
        }
    }
    csv_text(&header, out)
}

fn totals_csv(rows: &[Row]) -> Result<String, CliError> {
    let header: Vec<&str> = ["cache"]
        .into_iter()
        .chain(COLUMNS.iter().copied())
        .collect();
    let out = rows
        .iter()
        .map(|r| {
            let mut f = vec![r.cache.clone()];
            f.extend(fields(&r.all, r.unbounded.as_ref().map(|u| &u.1)));
            f
        })
        .collect();
    csv_text(&header, out)
}

/// One swept configuration's result.
struct SweepRow {
    cache: String,
    kv_blocks: Option<u64>,
    ttl: Option<Duration>,
    keepalive: Option<Duration>,
    all: Totals,
}

/// One point of a workload grid: a cache configuration and how its requests are built.
struct GridPoint {
    /// Index of its curve (the cache of `--cache` it belongs to).
    curve: usize,
    /// The cache with this point's pool size or TTL.
    spec: CacheSpec,
    /// How requests are built (the point's keep-alive).
    opts: BuildOptions,
    /// The pool size (`None` on a capacity curve: the unbounded pool).
    kv_blocks: Option<u64>,
    /// The TTL written (TTL curves only).
    ttl: Option<Duration>,
    /// The keep-alive interval (TTL curves only; `None`: off).
    keepalive: Option<Duration>,
}

/// The axes of `-L`, each `None` when not given.
#[derive(Default)]
struct Axes {
    kv: Option<Vec<u64>>,
    ttls: Option<Vec<Duration>>,
    keeps: Option<Vec<Option<Duration>>>,
}

fn axes(args: &WorkloadArgs) -> Result<Axes, CliError> {
    let mut out = Axes::default();
    for s in &args.sweep {
        match Axis::parse(s).map_err(CliError::input)? {
            Axis::KvBlocks(v) => out.kv = Some(v),
            Axis::Ttl(v) => out.ttls = Some(v),
            Axis::Keepalive(v) => out.keeps = Some(v),
        }
    }
    Ok(out)
}

/// Every point of the grid in output order: per engine its pool sizes then the unbounded pool,
/// per provider cache every keep-alive × TTL. Shards split this list.
fn grid(
    args: &WorkloadArgs,
    ctx: &Ctx,
    specs: &[CacheSpec],
    axes: &Axes,
) -> Result<Vec<GridPoint>, CliError> {
    let mut points = Vec::new();
    for (curve, spec) in specs.iter().enumerate() {
        if is_engine(&spec.name) {
            let Some(sizes) = &axes.kv else { continue };
            for b in sizes.iter().map(|&b| Some(b)).chain([None]) {
                points.push(GridPoint {
                    curve,
                    spec: spec.clone().with_kv_blocks(b),
                    opts: ctx.opts.clone(),
                    kv_blocks: b,
                    ttl: None,
                    keepalive: None,
                });
            }
        } else if axes.ttls.is_some() || axes.keeps.is_some() {
            let ttls = axes
                .ttls
                .clone()
                .unwrap_or_else(|| vec![args.ttl.unwrap_or(Duration::from_secs(300))]);
            let keeps = axes
                .keeps
                .clone()
                .unwrap_or_else(|| vec![args.keepalive.and_then(|k| k.0)]);
            for &k in &keeps {
                for &t in &ttls {
                    points.push(GridPoint {
                        curve,
                        spec: spec.clone().with_ttl(t).map_err(input)?,
                        opts: BuildOptions {
                            keepalive_ms: k.map(|d| d.as_millis() as u64),
                            ..ctx.opts.clone()
                        },
                        kv_blocks: None,
                        ttl: Some(t),
                        keepalive: k,
                    });
                }
            }
        }
    }
    Ok(points)
}

/// The shard `--shard` / `--shard-env` ask for, if any.
fn shard_of(args: &WorkloadArgs) -> Option<Shard> {
    args.shard.or(args.shard_env)
}

fn sweep(args: &WorkloadArgs, ctx: &Ctx, specs: &[CacheSpec]) -> Result<(), CliError> {
    let axes = axes(args)?;
    let points = grid(args, ctx, specs, &axes)?;
    if points.is_empty() {
        return Err(CliError::input(
            "-L: nothing to sweep\n  hint: kv-blocks sweeps need an engine (--cache paged or radix); ttl and keepalive sweeps a provider cache (--cache anthropic, openai)",
        ));
    }
    let shard = shard_of(args);
    let chosen: Vec<usize> = shard
        .unwrap_or_else(Shard::all)
        .indices(points.len())
        .collect();
    let bar = progress(args, (chosen.len() * ctx.traces.len()) as u64);
    // The engines' points share their requests and replay in parallel; the others (whose
    // requests differ by keep-alive) one after another, each parallel over its sessions.
    let engines: Vec<&CacheSpec> = chosen
        .iter()
        .map(|&i| &points[i].spec)
        .filter(|s| is_engine(&s.name))
        .collect();
    let mut engine_results = replay::run_engines(
        &ctx.traces,
        &ctx.starts,
        &engines,
        &ctx.opts,
        &ctx.prices,
        &bar,
    )
    .map_err(input)?
    .into_iter();
    let mut rows = Vec::with_capacity(chosen.len());
    for &i in &chosen {
        let p = &points[i];
        let res = if is_engine(&p.spec.name) {
            // An engine point's requests are built with the workload's options (see `grid`).
            engine_results
                .next()
                .ok_or_else(|| CliError::input(format!("--cache {}: not replayed", p.spec.name)))?
        } else {
            replay::run_with_progress(
                &ctx.traces,
                &ctx.starts,
                &p.spec,
                &p.opts,
                &ctx.prices,
                &bar,
            )
            .map_err(input)?
        };
        rows.push(SweepRow {
            cache: p.spec.name.clone(),
            kv_blocks: p.kv_blocks,
            ttl: p.ttl,
            keepalive: p.keepalive,
            all: replay::totals(ctx.traces.len(), &res).1,
        });
    }
    bar.finish_and_clear();
    if let Some(s) = shard {
        return write_shard(args, s, &chosen, &rows, points.len());
    }
    let mut text = String::new();
    for (curve, spec) in specs.iter().enumerate() {
        let mine: Vec<&SweepRow> = points
            .iter()
            .zip(&rows)
            .filter(|(p, _)| p.curve == curve)
            .map(|(_, r)| r)
            .collect();
        if mine.is_empty() {
            continue;
        }
        text.push_str(&if is_engine(&spec.name) {
            capacity(args, spec, &mine)?
        } else {
            ttl_curve(args, spec, &mine)?
        });
    }
    print!("{text}");
    if let Some(out) = &args.out {
        write(&out.join("workload_sweep.csv"), &sweep_csv(&rows, None)?)?;
    }
    Ok(())
}

/// Writes this shard's points as `DIR/shard-I-of-N.csv`: the rows of `workload_sweep.csv`
/// with their 1-based point number first, for `plancache merge`.
fn write_shard(
    args: &WorkloadArgs,
    shard: Shard,
    chosen: &[usize],
    rows: &[SweepRow],
    total: usize,
) -> Result<(), CliError> {
    let Some(out) = &args.out else {
        return Err(CliError::input(
            "--shard writes DIR/shard-I-of-N.csv\n  hint: give --out DIR (the same for every shard), then `plancache merge DIR/shard-*.csv --out DIR`",
        ));
    };
    let path = out.join(format!("shard-{}-of-{}.csv", shard.index, shard.count));
    write_atomic(&path, sweep_csv(rows, Some(chosen))?.as_bytes()).map_err(CliError::input)?;
    eprintln!(
        "wrote {} ({} of {} points)",
        path.display(),
        rows.len(),
        total
    );
    Ok(())
}

/// A progress bar over `len` session replays on a terminal; hidden under `-q` or when stderr
/// is not a terminal.
fn progress(args: &WorkloadArgs, len: u64) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if args.quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "workload [{bar:40}] {pos}/{len} session replays, {eta} left",
    ) {
        b.set_style(style.progress_chars("=> "));
    }
    b
}

fn sweep_line(label: &str, t: &Totals) -> String {
    format!(
        "{label:<24} {:>7} {:>14} {:>11.2}\n",
        pct(t.hit_rate()),
        t.recomputed_tokens(),
        t.cost_usd
    )
}

fn point(x: f64, t: &Totals) -> Point {
    Point {
        x,
        hit_rate: t.hit_rate(),
        cost_usd: t.cost_usd,
    }
}

/// The capacity curve of one engine (its rows: each pool size, then the unbounded pool), its
/// knee, its chart.
fn capacity(args: &WorkloadArgs, spec: &CacheSpec, rows: &[&SweepRow]) -> Result<String, CliError> {
    let (sized, free) = match rows.split_last() {
        Some((free, sized)) => (sized, &free.all),
        None => return Ok(String::new()),
    };
    let mut pts = Vec::new();
    let mut text = format!(
        "{} capacity curve (blocks of {} tokens)\n{:<24} {:>7} {:>14} {:>11}\n",
        spec.name,
        replay::KV_BLOCK_TOKENS,
        "kv_blocks",
        "hit",
        "recomputed",
        "cost_usd"
    );
    for r in sized {
        let b = r.kv_blocks.unwrap_or(0);
        text.push_str(&sweep_line(&b.to_string(), &r.all));
        pts.push(point(b as f64, &r.all));
    }
    text.push_str(&sweep_line("unbounded", free));
    let knee = curve::knee(&pts, free.hit_rate(), 0.01);
    text.push_str(&match knee {
        Some(k) => format!(
            "knee: {} blocks ({} tokens), the smallest pool within 1 point of unbounded\n",
            k,
            k as u64 * replay::KV_BLOCK_TOKENS
        ),
        None => {
            "knee: beyond the largest pool swept (no pool within 1 point of unbounded)\n".into()
        }
    });
    if let Some(out) = &args.out {
        let chart = CurveChart {
            title: format!("{}: hit rate and cost against pool size", spec.name),
            x_label: format!("KV pool (blocks of {} tokens)", replay::KV_BLOCK_TOKENS),
            log_x: true,
            series: vec![(spec.name.clone(), pts)],
            knee: knee.map(|k| (k, format!("knee: {}", curve::human(k)))),
        };
        chart_files(out, &format!("workload-capacity-{}", spec.name), &chart)?;
    }
    Ok(text)
}

fn chart_files(out: &Path, stem: &str, chart: &CurveChart) -> Result<(), CliError> {
    let svg = plancache::chart::svg(chart).map_err(CliError::input)?;
    write(&out.join(format!("{stem}.svg")), &svg)?;
    let png = out.join(format!("{stem}.png"));
    plancache::chart::png(chart, &png).map_err(CliError::input)?;
    eprintln!("wrote {}", png.display());
    Ok(())
}

fn show(d: Option<Duration>) -> String {
    d.map_or("off".into(), |d| humantime::format_duration(d).to_string())
}

/// The TTL × keep-alive grid of one provider cache (its rows, keep-alive by keep-alive): one
/// series per keep-alive.
fn ttl_curve(
    args: &WorkloadArgs,
    spec: &CacheSpec,
    rows: &[&SweepRow],
) -> Result<String, CliError> {
    let mut text = format!(
        "{} TTL curve\n{:<24} {:>7} {:>14} {:>11}\n",
        spec.name, "ttl / keepalive", "hit", "recomputed", "cost_usd"
    );
    let mut series: Vec<(String, Vec<Point>)> = Vec::new();
    for r in rows {
        let t = r.ttl.unwrap_or_default();
        let k = r.keepalive;
        text.push_str(&sweep_line(
            &format!("{} / {}", show(Some(t)), show(k)),
            &r.all,
        ));
        let name = format!("keepalive {}", show(k));
        if series.last().is_none_or(|(n, _)| *n != name) {
            series.push((name, Vec::new()));
        }
        if let Some((_, pts)) = series.last_mut() {
            pts.push(point(t.as_secs_f64() / 60.0, &r.all));
        }
    }
    if let Some(out) = &args.out {
        let chart = CurveChart {
            title: format!("{}: hit rate and cost against TTL", spec.name),
            x_label: "TTL (minutes)".into(),
            log_x: false,
            series,
            knee: None,
        };
        chart_files(out, &format!("workload-ttl-{}", spec.name), &chart)?;
    }
    Ok(text)
}

/// The sweep CSV; with `points` (0-based grid indices of the rows), a shard's: each row led by
/// its 1-based point number.
fn sweep_csv(rows: &[SweepRow], points: Option<&[usize]>) -> Result<String, CliError> {
    let header: Vec<&str> = points
        .map(|_| "point")
        .into_iter()
        .chain(SWEEP_HEADER.iter().copied())
        .chain(COLUMNS.iter().copied().take(8))
        .collect();
    let out = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut f: Vec<String> = points.map(|p| (p[i] + 1).to_string()).into_iter().collect();
            f.extend([
                r.cache.clone(),
                r.kv_blocks.map_or(
                    if r.ttl.is_none() {
                        "unbounded".into()
                    } else {
                        String::new()
                    },
                    |b| b.to_string(),
                ),
                r.ttl.map_or(String::new(), |t| show(Some(t))),
                if r.ttl.is_some() {
                    show(r.keepalive)
                } else {
                    String::new()
                },
            ]);
            f.extend(fields(&r.all, None).into_iter().take(8));
            f
        })
        .collect();
    csv_text(&header, out)
}

/// The leading columns of `workload_sweep.csv` (its point's configuration).
pub(super) const SWEEP_HEADER: &[&str] = &["cache", "kv_blocks", "ttl", "keepalive"];

/// `plancache merge` of `workload --shard` outputs: the header and rows (point column
/// dropped) of the `workload_sweep.csv` an unsharded run writes, when `header` is a workload
/// shard's.
pub(super) fn is_workload_shard(header: &[String]) -> bool {
    header.len() > SWEEP_HEADER.len()
        && header[0] == "point"
        && header[1..=SWEEP_HEADER.len()]
            .iter()
            .zip(SWEEP_HEADER)
            .all(|(a, b)| a == b)
}

/// The `workload_sweep.csv` bytes of merged workload shard rows (point column dropped).
pub(super) fn merged_sweep_csv(
    header: &[String],
    rows: &[Vec<String>],
) -> Result<String, CliError> {
    let h: Vec<&str> = header[1..].iter().map(String::as_str).collect();
    csv_text(&h, rows.iter().map(|r| r[1..].to_vec()).collect())
}

/// `plancache import trace FILE|DIR`: one scenario per stream of each trace.
pub fn import_trace(path: &Path, kind: Option<&str>, out: Option<&Path>) -> Result<(), CliError> {
    let want = trace_kind(kind)?;
    let traces = trace::read_path_as(path, want).map_err(input)?;
    let dir = path.is_dir();
    if dir && out.is_none() {
        return Err(CliError::input(format!(
            "{}: is a directory of {} trace(s)\n  hint: give --out DIR to write one scenario file per stream",
            path.display(),
            traces.len()
        )));
    }
    let mut files = Vec::new();
    for t in &traces {
        let scenarios = trace::scenario::scenarios(t);
        if scenarios.is_empty() {
            return Err(CliError::input(format!(
                "{}: no request found\n  hint: is this a block-hash trace?",
                t.file.display()
            )));
        }
        for s in &scenarios {
            let text = s.to_toml(t).map_err(CliError::input)?;
            let target = match out {
                None => None,
                Some(o) if dir => Some(o.join(file_name(&t.id, &s.stream))),
                Some(o) if s.stream == "main" => Some(o.to_path_buf()),
                Some(o) => Some(sibling(o, &s.stream)),
            };
            files.push((target, text, s.stream.clone()));
        }
    }
    if let (Some(o), true) = (out, dir) {
        std::fs::create_dir_all(o)
            .map_err(|e| CliError::input(format!("--out {}: {e}", o.display())))?;
    }
    for (target, text, stream) in files {
        match target {
            Some(p) => write(&p, &text)?,
            None if stream == "main" => print!("{text}"),
            None => eprintln!("{stream}: a subagent stream (use --out to write it)"),
        }
    }
    Ok(())
}

fn file_name(id: &str, stream: &str) -> String {
    let safe = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    if stream == "main" {
        format!("{}.toml", safe(id))
    } else {
        format!("{}.{}.toml", safe(id), safe(stream))
    }
}

fn sibling(out: &Path, stream: &str) -> PathBuf {
    let stem = out
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("scenario");
    out.with_file_name(file_name(stem, stream))
}
