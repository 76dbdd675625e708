//! `requests.csv` and `summary.csv` with the columns of the README's *Output columns*.

use super::{ExportError, Exporter};
use crate::engine::RunReport;
use crate::metrics::{
    REQUEST_COLUMNS, REQUEST_EXTRA_COLUMNS, SUMMARY_COLUMNS, SUMMARY_EXTRA_COLUMNS,
};

/// Writes `requests.csv`: one row per replayed request.
pub struct RequestsCsv;
/// Writes `summary.csv`: one row per scenario, strategy and cache model.
pub struct SummaryCsv;

fn to_csv(
    header: Vec<&str>,
    rows: impl Iterator<Item = Vec<String>>,
) -> Result<Vec<u8>, ExportError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header)?;
    for row in rows {
        w.write_record(&row)?;
    }
    w.into_inner()
        .map_err(|e| ExportError::CsvBuffer(e.to_string()))
}

impl Exporter for RequestsCsv {
    fn file_name(&self) -> &'static str {
        "requests.csv"
    }
    fn render(&self, report: &RunReport) -> Result<Vec<u8>, ExportError> {
        let header = REQUEST_COLUMNS
            .iter()
            .chain(REQUEST_EXTRA_COLUMNS)
            .copied()
            .collect();
        to_csv(header, report.rows().map(|r| r.cells()))
    }
}

impl Exporter for SummaryCsv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }
    fn render(&self, report: &RunReport) -> Result<Vec<u8>, ExportError> {
        let header = SUMMARY_COLUMNS
            .iter()
            .chain(SUMMARY_EXTRA_COLUMNS)
            .copied()
            .collect();
        let rows = report.summaries().into_iter().map(|s| {
            let mut cells = s.cells();
            cells.extend(s.extra_cells());
            cells
        });
        to_csv(header, rows)
    }
}
