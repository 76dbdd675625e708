//! `plancache merge`: join the shard outputs of a sweep.

use std::path::PathBuf;

use clap::Args;

use super::sweep::write_heatmaps;
use super::CliError;
use plancache::export::{write_atomic, OutputDir};
use plancache::sweep::{self, Sweep};

/// Join `plancache sweep --shard I/N` outputs into one sweep.csv (identical to an unsharded run).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache merge shards/shard-*.csv --out sweep-out
  plancache merge shards/*.csv --sweep sweeps/history-reset-vs-permission-mode.toml --out sweep-out

With --sweep, also checks that every point of the grid is present exactly once and draws the
heatmap(s) as `plancache sweep` does. Shards of `plancache workload -L ... --shard I/N` merge into
DIR/workload_sweep.csv, the file the unsharded workload writes (docs/scale-out.md).")]
pub struct MergeArgs {
    /// Shard CSV files written by `plancache sweep --shard I/N`.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Output directory (writes DIR/sweep.csv).
    #[arg(long, value_name = "DIR", default_value = "sweep-out")]
    pub out: PathBuf,
    /// The sweep file the shards came from: check completeness and draw the heatmap.
    #[arg(long)]
    pub sweep: Option<PathBuf>,
    /// Most points the sweep file's grid may have (as for `plancache sweep`).
    #[arg(long, value_name = "N", default_value_t = sweep::DEFAULT_MAX_POINTS)]
    pub max_points: u64,
}

pub fn merge(args: MergeArgs) -> Result<(), CliError> {
    super::common::check_out_dir(&args.out, "merge writes DIR/sweep.csv")?;
    let spec = match &args.sweep {
        Some(p) => Some(Sweep::load_capped(p, args.max_points)?),
        None => None,
    };
    let mut inputs = Vec::new();
    for p in &args.shards {
        let text = plancache::budget::read_text(p, "shard")
            .map_err(|e| CliError::input(format!("{}: {e}", p.display())))?;
        inputs.push((p.clone(), text));
    }
    if is_workload(&inputs) {
        return merge_workload(&args, &inputs);
    }
    let (header, rows) = sweep::merge(&inputs, spec.as_ref().map(Sweep::len))?;
    if let Some(s) = &spec {
        if header != s.header() {
            return Err(CliError::input(format!(
                "the shards' columns differ from {}\n  hint: merge shards of this sweep file",
                s.path.display()
            )));
        }
    }
    let bytes = sweep::to_csv(&header, &rows)?;
    // The same output transaction as `plancache sweep` (and the same kind: a merge replaces a
    // sweep's output in that directory).
    let out = OutputDir::begin(&args.out, "sweep")?;
    write_atomic(&out.path().join("sweep.csv"), &bytes)?;
    let mut maps = 0;
    if let Some(s) = &spec {
        maps = write_heatmaps(s, &header, &rows, out.path())?;
    }
    out.commit()?;
    eprintln!(
        "wrote {} ({} points from {} shard file(s){})",
        args.out.join("sweep.csv").display(),
        rows.len(),
        inputs.len(),
        if maps > 0 {
            format!(", {maps} heatmap(s)")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// The first shard is one of `plancache workload -L ... --shard I/N`.
fn is_workload(inputs: &[(PathBuf, String)]) -> bool {
    inputs.first().is_some_and(|(p, text)| {
        sweep::read_csv(p, text).is_ok_and(|(h, _)| super::workload::is_workload_shard(&h))
    })
}

/// Joins `workload --shard` outputs into the `workload_sweep.csv` of the unsharded run.
fn merge_workload(args: &MergeArgs, inputs: &[(PathBuf, String)]) -> Result<(), CliError> {
    if let Some(s) = &args.sweep {
        return Err(CliError::input(format!(
            "--sweep {}: the shards are `plancache workload` shards, whose grid is its -L axes\n  hint: drop --sweep (the shard names shard-I-of-N.csv show whether all are here)",
            s.display()
        )));
    }
    let (header, rows) = sweep::merge(inputs, None)?;
    let text = super::workload::merged_sweep_csv(&header, &rows)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::input(format!("--out {}: {e}", args.out.display())))?;
    let path = args.out.join("workload_sweep.csv");
    write_atomic(&path, text.as_bytes())?;
    eprintln!(
        "wrote {} ({} points from {} shard file(s))",
        path.display(),
        rows.len(),
        inputs.len()
    );
    Ok(())
}
