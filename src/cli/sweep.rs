//! `plancache sweep`: run a parameter grid, one CSV row per point, and the break-even heatmap.

use super::common::PricingArgs;
use std::path::{Path, PathBuf};

use clap::Args;

use super::CliError;
use plancache::chart::{self, heatmap};
use plancache::export::{write_atomic, OutputDir};
use plancache::sweep::{self, Generated, Shard, Sweep};

/// Run a parameter grid over generated sessions or over your own scenario files (in parallel).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache sweep scenarios/keepalive-review.toml --strategy permission-mode -L model=claude-sonnet-4-6,claude-opus-4-6 -L keepalive=off,4m30s
  plancache sweep my.toml -L 'steps[5].wait.duration=5m,20m,1h' -L ttl=5m,1h --out my-sweep
  plancache sweep sweeps/history-reset-vs-permission-mode.toml --out sweep-out
  plancache sweep sweeps/history-reset-vs-permission-mode.toml --shard 2/4 --out shards
  plancache merge shards/shard-*.csv --sweep sweeps/history-reset-vs-permission-mode.toml --out sweep-out

Without --shard: writes DIR/sweep.csv (one row per point) and, when the file has [compare],
DIR/heatmap.svg and DIR/heatmap.png (one heatmap-K file per combination of the other axes).
With --shard I/N: runs points I, I+N, I+2N, ... (1-based) and writes DIR/shard-I-of-N.csv;
`plancache merge` joins the shards into the same sweep.csv, byte for byte.
A progress bar shows on a terminal (stderr) only.

Scenario files instead of a sweep file: the grid is the cross product of the -L lists (the last
varies fastest) over each file; an axis is model, keepalive, ttl, strategy, cache, a cache-config
field (anthropic.message_ttl) or any scenario path (steps[5].wait.duration; indices from 1).
--model/--ttl/--keepalive/--set apply to every point. Prints one row per point and, for the last
axis with several values, each value's cost against its first value; --out DIR adds sweep.csv.")]
pub struct SweepArgs {
    /// The sweep file (TOML: name, [compare], [base], [grid]; docs/sweep.md), or scenario files
    /// and directories to sweep with -L.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output directory (default for a sweep file: sweep-out; scenario files: print only).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// An axis over scenario files: NAME=V1,V2,... (repeatable; the grid is the cross product).
    #[arg(short = 'L', long = "parameter-list", value_name = "NAME=V1,V2", value_parser = plancache::sweep::files::parse_list)]
    pub lists: Vec<plancache::sweep::Axis>,
    /// Parameters on every point's scenario (--model, --ttl, --keepalive, --set).
    #[command(flatten)]
    pub params: super::params::ParamArgs,
    /// Strategies over scenario files when there is no -L strategy= (default: all).
    #[arg(long)]
    pub strategy: Option<String>,
    /// Cache models over scenario files when there is no -L cache= (default: anthropic).
    #[arg(long)]
    pub cache: Option<String>,
    /// Run only slice I of N of the grid.
    #[arg(long, value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Run slice $VAR+1 of N, the 0-based index read from the environment variable VAR
    /// (`JOB_COMPLETION_INDEX/4` in a Kubernetes indexed Job; docs/scale-out.md).
    #[arg(long, value_name = "VAR/N", value_parser = Shard::from_env, conflicts_with = "shard")]
    pub shard_env: Option<Shard>,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
    /// Cache model parameters (see `plancache run --help`).
    #[arg(long, value_name = "FILE")]
    pub cache_config: Option<PathBuf>,
    /// Most points the grid may have.
    #[arg(long, value_name = "N", default_value_t = sweep::DEFAULT_MAX_POINTS)]
    pub max_points: u64,
    /// Keep points whose requests exceed the model's context window (refused by default).
    #[arg(long)]
    pub allow_over_context: bool,
}

/// Whether the one file given is a sweep file (a `[grid]` table) rather than a scenario.
fn is_sweep_file(files: &[PathBuf]) -> bool {
    let [file] = files else { return false };
    if file.is_dir() {
        return false;
    }
    match plancache::budget::read_text(file, "sweep file") {
        Ok(text) => match text.parse::<toml::Table>() {
            Ok(t) => t.contains_key("grid"),
            Err(_) => text.lines().any(|l| l.trim() == "[grid]"),
        },
        // The sweep-file reader reports an unreadable file.
        Err(_) => true,
    }
}

pub fn sweep(mut args: SweepArgs) -> Result<(), CliError> {
    args.shard = args.shard.or(args.shard_env);
    if !is_sweep_file(&args.files) {
        if args.shard.is_some() {
            return Err(CliError::input(
                "--shard splits a sweep file's grid; over scenario files run the grid whole\n  hint: drop --shard",
            ));
        }
        return super::sweep_files::run(super::sweep_files::FileSweep {
            files: &args.files,
            lists: &args.lists,
            params: &args.params,
            strategy: args.strategy.as_deref(),
            cache: args.cache.as_deref(),
            pricing: &args.pricing,
            cache_config: args.cache_config.as_deref(),
            out: args.out.as_deref(),
            max_points: args.max_points,
            allow_over_context: args.allow_over_context,
        });
    }
    if !args.lists.is_empty()
        || !args.params.is_empty()
        || args.strategy.is_some()
        || args.cache.is_some()
    {
        return Err(CliError::input(format!(
            "{}: -L, --model, --ttl, --keepalive, --set, --strategy and --cache sweep scenario files; a sweep file's axes are its [grid]\n  hint: add the axis to [grid], or name scenario files instead",
            args.files[0].display()
        )));
    }
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("sweep-out"));
    super::common::check_out_dir(&out_dir, "sweep writes a directory (sweep.csv, heatmaps)")?;
    let mut spec = Sweep::load_capped(&args.files[0], args.max_points)?;
    spec.allow_over_context = args.allow_over_context;
    let env = super::common::replay_env(&args.pricing, args.cache_config.as_deref())?;
    let shard = args.shard.unwrap_or_else(Shard::all);
    let rows = sweep::run(&spec, shard, &Generated::default(), &env)?;
    let header = spec.header();
    let bytes = sweep::to_csv(&header, &rows)?;
    if args.shard.is_some() {
        let path = out_dir.join(format!("shard-{}-of-{}.csv", shard.index, shard.count));
        write_atomic(&path, &bytes)?;
        eprintln!(
            "wrote {} ({} of {} points)",
            path.display(),
            rows.len(),
            spec.len()
        );
        return Ok(());
    }
    // One transaction: sweep.csv and its heatmaps appear together or not at all, and heatmaps
    // of an earlier sweep with more facets are removed.
    let out = OutputDir::begin(&out_dir, "sweep")?;
    write_atomic(&out.path().join("sweep.csv"), &bytes)?;
    let n = write_heatmaps(&spec, &header, &rows, out.path())?;
    for b in sweep::clear_context_break_even(&header, &rows)? {
        eprintln!("{}", b.line());
    }
    out.commit()?;
    eprintln!(
        "wrote {} ({} points{})",
        out_dir.display(),
        rows.len(),
        if n > 0 {
            format!(", {n} heatmap(s)")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// Draws the sweep's heatmaps into `dir` (`heatmap.*`, or `heatmap-K.*` for several facets).
pub fn write_heatmaps(
    spec: &Sweep,
    header: &[String],
    rows: &[Vec<String>],
    dir: &Path,
) -> Result<usize, plancache::chart::ChartError> {
    let maps = heatmap::heatmaps(spec, header, rows)?;
    for m in &maps {
        let cells = m.cells.iter().flatten().filter(|c| c.is_some()).count();
        eprintln!(
            "{} beats {} on {} in {} of {cells} cells{}",
            m.a,
            m.b,
            m.metric,
            m.a_wins(),
            if m.facet.is_empty() {
                String::new()
            } else {
                format!(" ({})", m.facet)
            }
        );
    }
    for (k, m) in maps.iter().enumerate() {
        let stem = if maps.len() == 1 {
            "heatmap".to_string()
        } else {
            format!("heatmap-{}", k + 1)
        };
        write_atomic(&dir.join(format!("{stem}.svg")), chart::svg(m)?.as_bytes())?;
        chart::png(m, &dir.join(format!("{stem}.png")))?;
    }
    Ok(maps.len())
}
