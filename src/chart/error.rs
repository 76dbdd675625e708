//! The errors of the charts and the report: a chart that could not be drawn or encoded, a row
//! the price table cannot split, a sweep CSV without the columns its heatmap needs.

use std::path::PathBuf;

use crate::cache::CacheError;
use crate::export::ExportError;

/// Why a chart or the report was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// plotters could not draw (its words).
    #[error("cannot draw chart: {0}")]
    Draw(String),
    /// The PNG encoder failed.
    #[error("PNG: {0}")]
    Png(#[from] ::png::EncodingError),
    /// A chart's PNG could not be encoded for `path`.
    #[error("{}: {source}", path.display())]
    PngFile {
        /// The PNG file.
        path: PathBuf,
        /// Why.
        source: Box<ChartError>,
    },
    /// A file could not be written.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A row's cache model could not be built.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A row's model has no price, so its cost cannot be split.
    #[error("model `{model}` (request {request} of {scenario} / {strategy}) is not in the pricing table\n  hint: pass the --pricing file the run used")]
    Unpriced {
        /// The model.
        model: String,
        /// The request's number.
        request: usize,
        /// The scenario.
        scenario: String,
        /// The strategy.
        strategy: String,
    },
    /// A sweep's `compare.metric` no column holds.
    #[error("unknown metric `{0}`")]
    UnknownMetric(String),
    /// A sweep CSV without a column the heatmap needs.
    #[error(
        "the sweep CSV has no column `{0}`\n  hint: merge and render shards of the same sweep file"
    )]
    NoColumn(String),
    /// A sweep CSV cell that is not a number.
    #[error("point {point}: `{column}` = `{value}` is not a number")]
    NotNumber {
        /// The point (first cell of the row).
        point: String,
        /// The metric's column.
        column: String,
        /// The cell.
        value: String,
    },
}
