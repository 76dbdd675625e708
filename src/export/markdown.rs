//! `summary.md`: the comparison table as Markdown, for pull requests and design docs.

use super::{ExportError, Exporter};
use crate::engine::RunReport;
use crate::metrics::SummaryRow;

/// Writes `summary.md` (`--format markdown`).
pub struct MarkdownExporter;

/// A Markdown table of summaries.
pub fn summary_table(rows: &[SummaryRow]) -> String {
    let mut s = String::from(
        "| scenario | strategy | cache | requests | prompt tokens | cached | written | recomputed | hit rate | cost (USD) | mean TTFT (ms) |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1}% | {:.4} | {:.0} |\n",
            r.scenario,
            r.strategy,
            r.cache,
            r.requests,
            r.prompt_tokens,
            r.cached_tokens,
            r.cache_write_tokens,
            r.recomputed_tokens,
            r.hit_rate * 100.0,
            r.cost_usd,
            r.ttft_ms
        ));
    }
    s
}

impl Exporter for MarkdownExporter {
    fn file_name(&self) -> &'static str {
        "summary.md"
    }
    fn render(&self, report: &RunReport) -> Result<Vec<u8>, ExportError> {
        Ok(summary_table(&report.summaries()).into_bytes())
    }
}
