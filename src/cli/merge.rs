//! `plancache merge`: join the shard outputs of a sweep.

use std::path::PathBuf;

use clap::Args;

use super::sweep::write_heatmaps;
use super::CliError;
use crate::export::write_atomic;
use crate::sweep::{self, Sweep};

/// Join `plancache sweep --shard I/N` outputs into one sweep.csv (identical to an unsharded run).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache merge shards/shard-*.csv --out sweep-out
  plancache merge shards/*.csv --sweep sweeps/history-reset-vs-permission-mode.toml --out sweep-out

With --sweep, also checks that every point of the grid is present exactly once and draws the
heatmap(s) as `plancache sweep` does.")]
pub struct MergeArgs {
    /// Shard CSV files written by `plancache sweep --shard I/N`.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Output directory (writes DIR/sweep.csv).
    #[arg(long, default_value = "sweep-out")]
    pub out: PathBuf,
    /// The sweep file the shards came from: check completeness and draw the heatmap.
    #[arg(long)]
    pub sweep: Option<PathBuf>,
}

pub fn merge(args: MergeArgs) -> Result<(), CliError> {
    let spec = match &args.sweep {
        Some(p) => Some(Sweep::load(p).map_err(CliError::input)?),
        None => None,
    };
    let mut inputs = Vec::new();
    for p in &args.shards {
        let text = std::fs::read_to_string(p)
            .map_err(|e| CliError::input(format!("{}: cannot read shard: {e}", p.display())))?;
        inputs.push((p.clone(), text));
    }
    let (header, rows) =
        sweep::merge(&inputs, spec.as_ref().map(Sweep::len)).map_err(CliError::input)?;
    if let Some(s) = &spec {
        if header != s.header() {
            return Err(CliError::input(format!(
                "the shards' columns differ from {}\n  hint: merge shards of this sweep file",
                s.path.display()
            )));
        }
    }
    let bytes = sweep::to_csv(&header, &rows).map_err(CliError::failed)?;
    write_atomic(&args.out.join("sweep.csv"), &bytes).map_err(CliError::input)?;
    let mut maps = 0;
    if let Some(s) = &spec {
        maps = write_heatmaps(s, &header, &rows, &args.out).map_err(CliError::failed)?;
    }
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
