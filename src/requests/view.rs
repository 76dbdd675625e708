//! `explain`'s table: one row per request (billed and predicted read and write, the first
//! difference, the cause) and one line per request with a cause (its detail, the marks it
//! invalidates, the provider's verdict), as text, Markdown or HTML. `plancache explain` prints
//! it; `plancache report LOG` puts it in the report as the per-request break view.

use std::fmt::Write as _;

use super::ExplainRow;

fn opt(n: Option<u64>) -> String {
    n.map_or("-".into(), |n| n.to_string())
}

/// The columns of `explain`'s table (and of the report's per-request view of a log).
const HEAD: [&str; 10] = [
    "#",
    "stream",
    "model",
    "prompt",
    "read",
    "write",
    "pred read",
    "pred write",
    "first difference",
    "cause",
];

/// One table row per explained request (a break's number marked `*`).
fn cells(rows: &[ExplainRow]) -> Vec<[String; 10]> {
    rows.iter()
        .map(|r| {
            [
                format!("{}{}", r.index + 1, if r.is_break { "*" } else { "" }),
                r.stream.clone(),
                r.model.clone(),
                r.prompt.to_string(),
                opt(r.billed_read),
                opt(r.billed_write),
                r.predicted_read.to_string(),
                r.predicted_write.to_string(),
                r.diverges_at.clone().unwrap_or_else(|| "-".into()),
                r.cause.name().to_string(),
            ]
        })
        .collect()
}

/// One line per request with a cause: its detail, the marks it invalidates, the provider's
/// verdict.
fn details(rows: &[ExplainRow]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.cause != super::Cause::None)
        .map(|r| {
            let mut line = format!("{} ({}): {}", r.index + 1, r.place, r.detail);
            if !r.invalidated.is_empty() {
                let _ = write!(line, "; invalidates {}", r.invalidated.join(", "));
            }
            if let Some(v) = &r.verdict {
                let _ = write!(line, "; provider says: {v}");
            }
            line
        })
        .collect()
}

/// The table (or Markdown table) of rows, then one line per break with its detail.
pub fn render(rows: &[ExplainRow], markdown: bool) -> String {
    let head = HEAD;
    let cells = cells(rows);
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "| {} |", head.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
        for c in &cells {
            let _ = writeln!(
                out,
                "| {} |",
                c.join(" | ").replace('|', "\\|").replace(" \\| ", " | ")
            );
        }
    } else {
        let widths: Vec<usize> = (0..head.len())
            .map(|k| {
                cells
                    .iter()
                    .map(|c| c[k].chars().count())
                    .chain([head[k].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |c: &[&str]| -> String {
            c.iter()
                .zip(&widths)
                .map(|(s, w)| format!("{s:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let _ = writeln!(out, "{}", line(&head));
        for c in &cells {
            let v: Vec<&str> = c.iter().map(String::as_str).collect();
            let _ = writeln!(out, "{}", line(&v));
        }
    }
    out.push('\n');
    let bullet = if markdown { "- " } else { "" };
    for line in details(rows) {
        let _ = writeln!(out, "{bullet}{line}");
    }
    out
}

/// The same table and lines as HTML, for the report.
pub fn render_html(rows: &[ExplainRow]) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut out = String::from("<table>\n<thead><tr>");
    for h in HEAD {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for c in cells(rows) {
        out.push_str("<tr>");
        for v in &c {
            let _ = write!(out, "<td>{}</td>", esc(v));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n<ul>\n");
    for line in details(rows) {
        let _ = writeln!(out, "<li>{}</li>", esc(&line));
    }
    out.push_str("</ul>\n");
    out
}
