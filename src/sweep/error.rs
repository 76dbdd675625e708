//! The errors of sweeps: a sweep file or `-L` axis that names something plancache does not know
//! (with the place and the nearest name), a grid too large, a point that failed (with its index
//! and values), a shard spec, and a shard CSV that `merge` cannot join (with file and line).

use std::path::PathBuf;

use crate::budget::InputError;
use crate::cache::CacheError;
use crate::compare::figures::FigureError;
use crate::engine::ReplayError;
use crate::scenario::generate::GenerateError;
use crate::scenario::params::ParamError;
use crate::scenario::{KeepaliveError, ScenarioError};
use crate::signals::Interrupted;
use crate::strategy::StrategyError;

/// The hint of every shard-environment error.
const SHARD_ENV_HINT: &str = "hint: write VAR/N, e.g. --shard-env JOB_COMPLETION_INDEX/4 (VAR holds the 0-based shard index)";

/// The hint of a CSV that is not a sweep's output.
const CSV_HINT: &str = "hint: pass CSV files written by `plancache sweep`";

/// Why a sweep could not be read, run or merged.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    // --- Context: where an inner error happened. ---
    /// An error in the sweep file `path` (its message follows the file name).
    #[error("{}: {source}", path.display())]
    InFile {
        /// The sweep file.
        path: PathBuf,
        /// What is wrong in it.
        source: Box<SweepError>,
    },
    /// A bad value of the `[grid]` axis `axis`.
    #[error("[grid] {axis}: {source}")]
    GridValue {
        /// The axis.
        axis: String,
        /// What is wrong with the value.
        source: Box<SweepError>,
    },
    /// A bad value of the `-L` axis `axis`.
    #[error("-L {axis}={value}: {source}")]
    ListValue {
        /// The axis.
        axis: String,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        source: Box<SweepError>,
    },
    /// A point of the grid that failed.
    #[error("{}: point {index} ({values}): {source}", path.display())]
    Point {
        /// The sweep file (or the first scenario file).
        path: PathBuf,
        /// The point, from 1.
        index: usize,
        /// Its values, `axis=value` joined by `, `.
        values: String,
        /// Why it failed.
        source: Box<SweepError>,
    },

    // --- The sweep file and its axes. ---
    /// A file (sweep file, scenario) that could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: InputError,
    },
    /// A sweep file that is not TOML of the sweep format.
    #[error("{}: {}\n  hint: a sweep file has `name`, optional `description` and `[compare]` (a, b, metric, x, y), `[base]` generator parameters and `[grid]` lists; see docs/sweep.md", path.display(), source.to_string().trim_end())]
    Syntax {
        /// The sweep file.
        path: PathBuf,
        /// The TOML reader's reason.
        source: toml::de::Error,
    },
    /// A `[base]` key or `[grid]` axis that is not a generator parameter.
    #[error(transparent)]
    UnknownParameter(Box<UnknownParameter>),
    /// A number of `[base]` or `[grid]` that is NaN or infinite.
    #[error(
        "[{section}] {name}: `{value}` is not a finite number\n  hint: give a number such as 0.5"
    )]
    NotFinite {
        /// `base` or `grid`.
        section: &'static str,
        /// The key.
        name: String,
        /// The value.
        value: f64,
    },
    /// A `[grid]` entry that is not a non-empty list.
    #[error("[grid] {name}: expected a non-empty list of values\n  hint: e.g. {name} = [1, 2, 4]")]
    NotAList {
        /// The axis.
        name: String,
    },
    /// A name both in `[base]` and `[grid]`.
    #[error("`{name}` is both in [base] and in [grid]\n  hint: keep it in one of them")]
    BaseAndGrid {
        /// The name.
        name: String,
    },
    /// A grid with no strategy to replay.
    #[error("[grid] has no `strategy` axis and there is no [compare]\n  hint: add strategy = [\"permission-mode\", \"toolset-swap\"] to [grid]")]
    NoStrategy,
    /// An option-axis value that is not a string.
    #[error("[grid] {axis}: `{value}` must be a name in quotes")]
    NotAName {
        /// The axis.
        axis: String,
        /// The value as TOML.
        value: String,
    },
    /// A cache model plancache does not have.
    #[error("unknown cache model `{name}`{suggestion}\n  hint: one of {}", crate::cache::CACHE_NAMES.join(", "))]
    UnknownCache {
        /// The name as given.
        name: String,
        /// `; did you mean ...?`, or empty.
        suggestion: String,
    },
    /// A TTL class other than `5m` and `1h`.
    #[error("`{value}` is not a TTL class\n  hint: \"5m\" or \"1h\"")]
    Ttl {
        /// The value as given.
        value: String,
    },
    /// `[compare] metric` that is not a sweep metric.
    #[error("[compare] metric `{metric}` is unknown\n  hint: cost, hit-rate, recomputed or ttft")]
    CompareMetric {
        /// The metric as given.
        metric: String,
    },
    /// `[compare] x` or `y` that is not a generator axis of the grid.
    #[error("[compare] {key} = \"{value}\" is not a generator axis of [grid]\n  hint: name one of: {axes}")]
    CompareAxis {
        /// `x` or `y`.
        key: &'static str,
        /// The axis named.
        value: String,
        /// The generator axes of the grid, joined by `, `.
        axes: String,
    },
    /// `[compare] a` or `b` that is not in the strategy axis.
    #[error("[compare] strategy `{name}` is not in [grid] strategy\n  hint: add it to the strategy list")]
    CompareStrategy {
        /// The strategy.
        name: String,
    },
    /// A grid over the point cap.
    #[error("{scope}: the grid has more than {max} points (the product of its axis lengths: {lengths})\n  hint: shorten the lists, or raise the limit with --max-points N")]
    TooManyPoints {
        /// `[grid]` or `the grid`.
        scope: &'static str,
        /// The cap.
        max: u64,
        /// Each axis and its length, joined by ` x `.
        lengths: String,
    },
    /// A grid larger than this machine's index type.
    #[error("{scope}: the grid has {points} points, more than this machine can index")]
    Unindexable {
        /// `[grid]` or `the grid`.
        scope: &'static str,
        /// The number of points.
        points: u64,
    },
    /// An `-L` spec without a name or values.
    #[error("-L {spec}: {why}\n  hint: write NAME=V1,V2,..., e.g. -L model=claude-sonnet-4-6,claude-opus-4-6")]
    ListSpec {
        /// The spec as given.
        spec: String,
        /// What is missing.
        why: &'static str,
    },
    /// `-L scenario=`.
    #[error("the scenarios are the command's file arguments")]
    ScenarioAxis,
    /// An `-L` name that is none of the axes.
    #[error("{}\n  note: an axis is model, keepalive, ttl, strategy, cache, a cache-config field (anthropic.message_ttl) or a scenario path", source.to_string().trim_start_matches("--set "))]
    NotAnAxis {
        /// The scenario path's error.
        source: Box<ParamError>,
    },
    /// The same `-L` axis twice.
    #[error("-L {name}: the axis is given twice\n  hint: list every value in one -L {name}=A,B")]
    AxisTwice {
        /// The axis.
        name: String,
    },
    /// A point's scenario file that is not among the files read.
    #[error("no scenario file `{0}`")]
    NoScenarioFile(String),
    /// A point whose request exceeds its model's context window.
    #[error("{why}\n  hint: shrink the grid, or pass --allow-over-context to keep such points")]
    OverContext {
        /// The request and the window.
        why: String,
    },
    /// A point's generator parameters that do not deserialize.
    #[error("generator parameters: {}\n  hint: see `plancache generate --help` for the parameter names", source.to_string().trim_end())]
    GeneratorParams {
        /// The TOML reader's reason.
        source: toml::de::Error,
    },
    /// A point's generator parameters out of range.
    #[error("generator parameters: {0}")]
    InvalidParams(GenerateError),

    // --- Shards. ---
    /// `--shard` that is not I/N with 1 <= I <= N.
    #[error("`{0}` is not a shard\n  hint: write I/N with 1 <= I <= N, e.g. --shard 2/4")]
    Shard(String),
    /// `--shard-env` without a `/`.
    #[error("`{spec}` is not VAR/N\n  {hint}", hint = SHARD_ENV_HINT)]
    ShardEnvSpec {
        /// The spec as given.
        spec: String,
    },
    /// `--shard-env` whose N is not a count of at least 1.
    #[error("`{spec}`: `{count}` is not a shard count of at least 1\n  {hint}", hint = SHARD_ENV_HINT)]
    ShardEnvCount {
        /// The spec as given.
        spec: String,
        /// The count as given.
        count: String,
    },
    /// `--shard-env` naming a variable that is not set.
    #[error("`{spec}`: the environment variable {var} is not set\n  {hint}", hint = SHARD_ENV_HINT)]
    ShardEnvUnset {
        /// The spec as given.
        spec: String,
        /// The variable.
        var: String,
    },
    /// `--shard-env` whose variable is not an index below N.
    #[error("`{spec}`: {var}={value} is not a shard index from 0 to {max}\n  {hint}", hint = SHARD_ENV_HINT)]
    ShardEnvIndex {
        /// The spec as given.
        spec: String,
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// The largest index, N - 1.
        max: usize,
    },

    // --- Shard CSVs and merge. ---
    /// A CSV whose header cannot be read.
    #[error("{}: line 1: not CSV: {source}", path.display())]
    NotCsv {
        /// The file.
        path: PathBuf,
        /// The CSV reader's reason.
        source: csv::Error,
    },
    /// A CSV whose first column is not `point`.
    #[error("{}: line 1: the first column is not `point`\n  {hint}", path.display(), hint = CSV_HINT)]
    NoPointColumn {
        /// The file.
        path: PathBuf,
    },
    /// A CSV record that cannot be read.
    #[error("{}: {source}", path.display())]
    CsvRecord {
        /// The file.
        path: PathBuf,
        /// The CSV reader's reason.
        source: csv::Error,
    },
    /// A header naming a column twice.
    #[error("{}: line 1: column `{name}` is given twice (columns {first} and {second})\n  {hint}", path.display(), hint = CSV_HINT)]
    DuplicateColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        name: String,
        /// Its first position, from 1.
        first: usize,
        /// Its second position, from 1.
        second: usize,
    },
    /// A summary cell that no replay writes.
    #[error("{}:{line}: column `{column}`: `{cell}` {why}\n  {hint}, unedited", path.display(), hint = CSV_HINT)]
    BadCell {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The column.
        column: String,
        /// The cell as written.
        cell: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A shard whose header differs from the first shard's.
    #[error("{}: header differs from {}\n  hint: merge shards of the same sweep file", path.display(), first.display())]
    HeaderDiffers {
        /// The shard.
        path: PathBuf,
        /// The first shard.
        first: PathBuf,
    },
    /// A `point` cell that is not a number.
    #[error("{}: line {line}: point `{value}` is not a number", path.display())]
    PointNotNumber {
        /// The shard.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The cell.
        value: String,
    },
    /// Two rows holding the same point.
    #[error("{}:{first_line} and {}:{line}: both hold point {point}\n  hint: each shard I/N of one sweep holds different points; pass each shard once", first.display(), path.display())]
    DuplicatePoint {
        /// The file of the first row.
        first: PathBuf,
        /// Its line.
        first_line: usize,
        /// The file of the second row.
        path: PathBuf,
        /// Its line.
        line: usize,
        /// The point.
        point: usize,
    },
    /// `merge` with no file.
    #[error("no shard files given\n  hint: plancache merge out/shard-*.csv --out out")]
    NoShards,
    /// A point beyond the sweep file's grid.
    #[error("{}: point {point} is not a point of the sweep's grid (1 to {n})\n  hint: merge shards of this sweep file", path.display())]
    PointOutsideGrid {
        /// The shard.
        path: PathBuf,
        /// The point.
        point: usize,
        /// The grid's size.
        n: usize,
    },
    /// Points absent from the shards.
    #[error("the shards hold {present} of {n} points; missing: {missing}{}\n  hint: run every shard I/N of the sweep before merging", if *more > 0 { format!(" and {more} more") } else { String::new() })]
    MissingPoints {
        /// Points present.
        present: usize,
        /// Points of the grid.
        n: usize,
        /// The first missing points, joined by `, `.
        missing: String,
        /// Missing points not listed.
        more: usize,
    },
    /// A shard file not named `shard-I-of-N.csv` (without `--sweep`).
    #[error("{}: not named shard-I-of-N.csv, so merge cannot tell whether every shard is here\n  hint: pass the sweep file with --sweep FILE to check the points against the grid", path.display())]
    ShardName {
        /// The file.
        path: PathBuf,
    },
    /// Shards of different splits.
    #[error("{}: shard of {count} while the other files are shards of {other}\n  hint: merge the shards of one `--shard I/N` split", path.display())]
    ShardCounts {
        /// The file.
        path: PathBuf,
        /// Its N.
        count: usize,
        /// The other files' N.
        other: usize,
    },
    /// Shard files absent (without `--sweep`).
    #[error("{given} of {n} shard files given; missing: {missing}{}\n  hint: run every shard I/N of the sweep before merging, or pass --sweep FILE", if *more { " and more" } else { "" })]
    MissingShards {
        /// Files given.
        given: usize,
        /// Shards of the split.
        n: usize,
        /// The first missing file names, joined by `, `.
        missing: String,
        /// Whether more are missing than listed.
        more: bool,
    },
    /// A break-even cell that is not a number.
    #[error("sweep row: `{value}` is not a number in column {column}")]
    NotANumber {
        /// The cell.
        value: String,
        /// The column.
        column: String,
    },
    /// A CSV that could not be written.
    #[error(transparent)]
    CsvWrite(#[from] csv::Error),
    /// A CSV writer's buffer that could not be taken back.
    #[error(transparent)]
    Io(#[from] std::io::Error),

    // --- The layers the sweep calls. ---
    /// A cache model that could not be built or configured.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A scenario that could not be loaded.
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// A scenario parameter (`--set` path) that could not be applied.
    #[error(transparent)]
    Param(Box<ParamError>),
    /// A strategy list that names an unknown strategy.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// A generated scenario that could not be written as TOML.
    #[error(transparent)]
    Generate(#[from] GenerateError),
    /// A keep-alive interval that is not one.
    #[error(transparent)]
    Keepalive(#[from] KeepaliveError),
    /// A shard row whose figures no replay writes.
    #[error(transparent)]
    Figure(#[from] FigureError),
    /// A replay that could not run.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// A cache-config table that could not be written as TOML.
    #[error(transparent)]
    Toml(#[from] toml::ser::Error),
    /// A signal stopped the sweep.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// A session source's own error (a closure used as [`super::ScenarioSource`]).
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
}

/// A `[base]` key or `[grid]` axis of a sweep file that is not a generator parameter.
#[derive(Debug, thiserror::Error)]
#[error("{}:{} [{section}] {what} `{name}` is not a generator parameter{}{}\n  hint: `plancache generate --help` lists the parameters; [grid] also takes {}",
    path.display(),
    place.map_or(String::new(), |(l, c)| format!(" line {l}, column {c}:")),
    near.as_ref().map_or(String::new(), |n| format!("; did you mean `{n}`?")),
    snippet.as_ref().map_or(String::new(), |s| format!("\n{s}")),
    super::OPTION_AXES.join(", "))]
pub struct UnknownParameter {
    /// The sweep file.
    pub path: PathBuf,
    /// Line and column of the key, when found in the text.
    pub place: Option<(usize, usize)>,
    /// `base` or `grid`.
    pub section: &'static str,
    /// `key` (in `[base]`) or `axis` (in `[grid]`).
    pub what: &'static str,
    /// The name as written.
    pub name: String,
    /// The nearest known name.
    pub near: Option<String>,
    /// The line with a caret under the name.
    pub snippet: Option<String>,
}

impl From<ScenarioError> for SweepError {
    fn from(e: ScenarioError) -> Self {
        SweepError::Scenario(Box::new(e))
    }
}

impl From<ParamError> for SweepError {
    fn from(e: ParamError) -> Self {
        SweepError::Param(Box::new(e))
    }
}

impl SweepError {
    /// This error inside the sweep file `path`.
    pub fn in_file(path: &std::path::Path) -> impl FnOnce(SweepError) -> SweepError {
        let path = path.to_path_buf();
        move |e| SweepError::InFile {
            path,
            source: Box::new(e),
        }
    }

    /// This error of a value of the `[grid]` axis `axis`.
    pub fn grid_value(axis: &str) -> impl FnOnce(SweepError) -> SweepError {
        let axis = axis.to_string();
        move |e| SweepError::GridValue {
            axis,
            source: Box::new(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_stays_small() {
        // Every function of the sweep returns it; large payloads are boxed (clippy's
        // `result_large_err` refuses 128 bytes).
        let size = std::mem::size_of::<SweepError>();
        assert!(size < 128, "{size} bytes");
    }
}
