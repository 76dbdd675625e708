//! `plancache sweep`: run a parameter grid, one CSV row per point, and the break-even heatmap.

use std::path::{Path, PathBuf};

use clap::Args;

use super::common::{cache_config, price_table};
use super::CliError;
use crate::chart::{self, heatmap};
use crate::engine::ReplayEnv;
use crate::export::{write_atomic, OutputDir};
use crate::sweep::{self, Generated, Shard, Sweep};

/// Run a parameter grid over generated sessions (in parallel) and draw the break-even heatmap.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache sweep sweeps/history-reset-vs-permission-mode.toml --out sweep-out
  plancache sweep sweeps/history-reset-vs-permission-mode.toml --shard 2/4 --out shards
  plancache merge shards/shard-*.csv --sweep sweeps/history-reset-vs-permission-mode.toml --out sweep-out

Without --shard: writes DIR/sweep.csv (one row per point) and, when the file has [compare],
DIR/heatmap.svg and DIR/heatmap.png (one heatmap-K file per combination of the other axes).
With --shard I/N: runs points I, I+N, I+2N, ... (1-based) and writes DIR/shard-I-of-N.csv;
`plancache merge` joins the shards into the same sweep.csv, byte for byte.
A progress bar shows on a terminal (stderr) only.")]
pub struct SweepArgs {
    /// The sweep file (TOML): name, [compare], [base], [grid]. See docs/sweep.md.
    pub file: PathBuf,
    /// Output directory.
    #[arg(long, default_value = "sweep-out")]
    pub out: PathBuf,
    /// Run only slice I of N of the grid.
    #[arg(long, value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// A pricing file that adds or replaces models of the bundled table.
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Cache model parameters (see `plancache run --help`).
    #[arg(long)]
    pub cache_config: Option<PathBuf>,
    /// Most points the grid may have.
    #[arg(long, value_name = "N", default_value_t = sweep::DEFAULT_MAX_POINTS)]
    pub max_points: u64,
    /// Keep points whose requests exceed the model's context window (refused by default).
    #[arg(long)]
    pub allow_over_context: bool,
}

pub fn sweep(args: SweepArgs) -> Result<(), CliError> {
    super::common::check_out_dir(&args.out, "sweep writes a directory (sweep.csv, heatmaps)")?;
    let mut spec = Sweep::load_capped(&args.file, args.max_points).map_err(CliError::input)?;
    spec.allow_over_context = args.allow_over_context;
    let env = ReplayEnv {
        prices: price_table(args.pricing.as_deref())?,
        caches: cache_config(args.cache_config.as_deref())?,
        ..ReplayEnv::default()
    };
    let shard = args.shard.unwrap_or_else(Shard::all);
    let rows = sweep::run(&spec, shard, &Generated::default(), &env).map_err(CliError::input)?;
    let header = spec.header();
    let bytes = sweep::to_csv(&header, &rows).map_err(CliError::input)?;
    if args.shard.is_some() {
        let path = args
            .out
            .join(format!("shard-{}-of-{}.csv", shard.index, shard.count));
        write_atomic(&path, &bytes).map_err(CliError::input)?;
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
    let out = OutputDir::begin(&args.out, "sweep").map_err(CliError::input)?;
    write_atomic(&out.path().join("sweep.csv"), &bytes).map_err(CliError::input)?;
    let n = write_heatmaps(&spec, &header, &rows, out.path()).map_err(CliError::input)?;
    for b in sweep::clear_context_break_even(&header, &rows).map_err(CliError::input)? {
        eprintln!("{}", b.line());
    }
    out.commit().map_err(CliError::input)?;
    eprintln!(
        "wrote {} ({} points{})",
        args.out.display(),
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
) -> Result<usize, String> {
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
