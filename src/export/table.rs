//! The comparison table printed to the terminal.

use crate::metrics::SummaryRow;

/// A plain-text table of summaries, columns aligned.
pub fn render_table(rows: &[SummaryRow]) -> String {
    render_table_with(rows, &[], &[])
}

/// As [`render_table`], with extra right-aligned columns after the table's own (`extra[i]` are
/// row i's cells). The table's own columns count replies; keep-alive pings and compaction
/// requests, when any row has some, get three columns each (count, prompt tokens, cost).
pub fn render_table_with(
    rows: &[SummaryRow],
    extra_header: &[&str],
    extra: &[Vec<String>],
) -> String {
    let mut header = vec![
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
    let pings = rows.iter().any(|r| r.pings.requests > 0);
    let compactions = rows.iter().any(|r| r.compactions.requests > 0);
    if pings {
        header.extend(["pings", "ping tokens", "ping $"]);
    }
    if compactions {
        header.extend(["compactions", "compaction tokens", "compaction $"]);
    }
    header.extend_from_slice(extra_header);
    let body: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut cells = vec![
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
            ];
            for (shown, e) in [(pings, &r.pings), (compactions, &r.compactions)] {
                if shown {
                    cells.push(e.requests.to_string());
                    cells.push(e.prompt_tokens.to_string());
                    cells.push(format!("{:.4}", e.cost_usd));
                }
            }
            cells.extend(extra.get(i).cloned().unwrap_or_default());
            cells.resize(header.len(), String::new());
            cells
        })
        .collect();
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    align(&head, &body, 3)
}

/// Aligned columns: the first `left` left-aligned, the rest right-aligned.
pub fn align(head: &[String], body: &[Vec<String>], left: usize) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in body {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < left {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
            + "\n"
    };
    let mut out = line(head);
    for row in body {
        out.push_str(&line(row));
    }
    out
}
