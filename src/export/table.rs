//! The comparison table printed to the terminal.

use crate::metrics::SummaryRow;

/// A plain-text table of summaries, columns aligned.
pub fn render_table(rows: &[SummaryRow]) -> String {
    let header = [
        "scenario",
        "strategy",
        "cache",
        "reqs",
        "prompt",
        "cached",
        "written",
        "recomputed",
        "hit rate",
        "cost $",
        "TTFT ms",
    ];
    let body: Vec<[String; 11]> = rows
        .iter()
        .map(|r| {
            [
                r.scenario.clone(),
                r.strategy.clone(),
                r.cache.clone(),
                r.requests.to_string(),
                r.prompt_tokens.to_string(),
                r.cached_tokens.to_string(),
                r.cache_write_tokens.to_string(),
                r.recomputed_tokens.to_string(),
                format!("{:.1}%", r.hit_rate * 100.0),
                format!("{:.4}", r.cost_usd),
                format!("{:.0}", r.ttft_ms),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &body {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < 3 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for row in &body {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}
