//! `run.json`: summaries, rows and decision traces in one document.

use serde::Serialize;

use super::{ExportError, Exporter};
use crate::engine::RunReport;
use crate::metrics::{RequestRow, SummaryRow};
use crate::plan_mode::Trace;

/// Writes `run.json` (`--format json`).
pub struct JsonExporter;

#[derive(Serialize)]
struct Doc<'a> {
    summary: Vec<SummaryRow>,
    requests: Vec<&'a RequestRow>,
    traces: Vec<TraceDoc<'a>>,
    violations: &'a [String],
}

#[derive(Serialize)]
struct TraceDoc<'a> {
    scenario: &'a str,
    strategy: &'a str,
    cache: &'a str,
    trace: &'a Trace,
}

impl Exporter for JsonExporter {
    fn file_name(&self) -> &'static str {
        "run.json"
    }
    fn render(&self, report: &RunReport) -> Result<Vec<u8>, ExportError> {
        let doc = Doc {
            summary: report.summaries(),
            requests: report.rows().collect(),
            traces: report
                .replays
                .iter()
                .map(|r| TraceDoc {
                    scenario: &r.scenario,
                    strategy: &r.strategy,
                    cache: &r.cache,
                    trace: &r.trace,
                })
                .collect(),
            violations: &report.violations,
        };
        let mut bytes = serde_json::to_vec_pretty(&doc)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
