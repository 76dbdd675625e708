//! The design-review report: `report.html` (self-contained, charts inline as SVG) and `report.md`
//! (for a pull request), each with a verdict computed from the data, a summary table, the cache
//! breaks explained, the decision trace and the state machine with the transitions taken.

use std::fmt::Write as _;
use std::path::Path;

use super::data::{self, breaks, cost_split, Break, CostSplit, Group};
use super::{machine, render_group, Rendered};
use crate::cache::PriceTable;
use crate::engine::{Replay, RunReport};
use crate::export::{self, write_atomic, RequestsCsv, SummaryCsv};
use crate::strategy::Strategy;

/// Everything the report says about one scenario x cache model.
pub struct Section<'a> {
    pub group: Group<'a>,
    pub splits: Vec<CostSplit>,
    pub verdict: Vec<String>,
}

/// Builds the sections of a run (no charts).
pub fn sections<'a>(run: &'a RunReport, prices: &PriceTable) -> Result<Vec<Section<'a>>, String> {
    data::groups(run)
        .into_iter()
        .map(|group| {
            let splits = group
                .replays
                .iter()
                .map(|r| cost_split(&r.rows, prices))
                .collect::<Result<Vec<_>, _>>()?;
            let verdict = verdict(&group, &splits);
            Ok(Section {
                group,
                splits,
                verdict,
            })
        })
        .collect()
}

/// `3`, `3 and 9`, `2, 5 and 9`.
fn join_numbers(v: &[usize]) -> String {
    join_words(&v.iter().map(|n| n.to_string()).collect::<Vec<_>>())
}

/// `a`, `a and b`, `a, b and c`.
fn join_words(s: &[String]) -> String {
    match s.len() {
        0 => String::new(),
        1 => s[0].clone(),
        n => format!("{} and {}", s[..n - 1].join(", "), s[n - 1]),
    }
}

/// "toolset-swap breaks the cache at requests 3 and 9 because the tools list changed; at request
/// 6 because ..." for one or several strategies with the same breaks.
pub fn break_sentence(strategies: &[String], bs: &[Break]) -> String {
    let who = join_words(strategies);
    let one = strategies.len() == 1;
    if bs.is_empty() {
        return if one {
            format!("{who} keeps its cached prefix on every request")
        } else {
            format!("{who} keep their cached prefix on every request")
        };
    }
    let mut by_cause: Vec<(String, Vec<usize>)> = Vec::new();
    for b in bs {
        match by_cause.iter_mut().find(|(c, _)| *c == b.because) {
            Some((_, v)) => v.push(b.request),
            None => by_cause.push((b.because.clone(), vec![b.request])),
        }
    }
    let parts: Vec<String> = by_cause
        .iter()
        .map(|(cause, reqs)| {
            let word = if reqs.len() == 1 {
                "request"
            } else {
                "requests"
            };
            format!("at {word} {} because {cause}", join_numbers(reqs))
        })
        .collect();
    let verb = if one { "breaks" } else { "break" };
    format!("{who} {verb} the cache {}", parts.join("; "))
}

/// Plain-language verdict sentences computed from the group's numbers. Strategies with the same
/// figures (or the same breaks) share one sentence.
pub fn verdict(group: &Group<'_>, splits: &[CostSplit]) -> Vec<String> {
    let mut out = Vec::new();
    let reps = &group.replays;
    if reps.is_empty() {
        return out;
    }
    // The strategy with the cheapest prompt (input) cost; ties go to the first listed.
    let best = (0..reps.len())
        .min_by(|&a, &b| splits[a].input().total_cmp(&splits[b].input()))
        .unwrap_or(0);
    let a = reps[best];
    let a_hit = a.summary().hit_rate * 100.0;
    if reps.len() == 1 {
        out.push(format!(
            "{} reads {a_hit:.0}% of its prompt tokens from the cache and costs ${:.4} on this session.",
            a.strategy,
            splits[best].total()
        ));
    }
    // Others grouped by the sentence their figures give (same rounded cost and hit rate).
    let mut comparisons: Vec<(String, Vec<String>)> = Vec::new();
    for (i, b) in reps.iter().enumerate() {
        if i == best {
            continue;
        }
        let (ia, ib) = (splits[best].input(), splits[i].input());
        let saved = if ib > 0.0 {
            (ib - ia) / ib * 100.0
        } else {
            0.0
        };
        let b_hit = b.summary().hit_rate * 100.0;
        let tail = if saved < 0.05 {
            format!("cost the same for input on this session (${ia:.4}; hit rate {a_hit:.0}% vs {b_hit:.0}%)")
        } else {
            format!("on this session (${ia:.4} vs ${ib:.4}; hit rate {a_hit:.0}% vs {b_hit:.0}%)|{saved:.0}")
        };
        match comparisons.iter_mut().find(|(t, _)| *t == tail) {
            Some((_, names)) => names.push(b.strategy.clone()),
            None => comparisons.push((tail, vec![b.strategy.clone()])),
        }
    }
    for (tail, names) in comparisons {
        match tail.split_once('|') {
            Some((rest, saved)) => out.push(format!(
                "{} saves {saved}% of input cost over {} {rest}.",
                a.strategy,
                join_words(&names)
            )),
            None => out.push(format!("{} and {} {tail}.", a.strategy, join_words(&names))),
        }
    }
    // Where each strategy breaks the cache: the cheapest first, then the others in run order,
    // strategies with identical breaks together.
    let mut groups: Vec<(Vec<Break>, Vec<String>)> = Vec::new();
    let order = std::iter::once(best).chain((0..reps.len()).filter(|&i| i != best));
    for i in order {
        let r = reps[i];
        let bs = breaks(&r.rows);
        match groups.iter_mut().find(|(b, _)| {
            b.len() == bs.len()
                && b.iter()
                    .zip(&bs)
                    .all(|(x, y)| x.request == y.request && x.because == y.because)
        }) {
            Some((_, names)) if i != best => names.push(r.strategy.clone()),
            _ => groups.push((bs, vec![r.strategy.clone()])),
        }
    }
    for (bs, names) in groups {
        out.push(format!("{}.", break_sentence(&names, &bs)));
    }
    out
}

/// Writes `dir/requests.csv`, `dir/summary.csv`, `dir/charts/*`, `dir/report.html`, `dir/report.md`.
pub fn write(
    dir: &Path,
    run: &RunReport,
    prices: &PriceTable,
    strategies: &[Box<dyn Strategy>],
) -> Result<(), String> {
    let sections = sections(run, prices)?;
    let chart_dir = dir.join("charts");
    let mut charts = Vec::new();
    for s in &sections {
        charts.push(render_group(&s.group, prices, Some(&chart_dir))?);
    }
    export::write_all(dir, run, &[Box::new(RequestsCsv), Box::new(SummaryCsv)])?;
    write_atomic(
        &dir.join("report.html"),
        html(&sections, &charts, strategies).as_bytes(),
    )?;
    write_atomic(
        &dir.join("report.md"),
        markdown(&sections, &charts, strategies).as_bytes(),
    )?;
    Ok(())
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Summary table cells per replay: strategy, requests, hit rate, recomputed, the cost split, TTFT.
const SUMMARY_HEADER: [&str; 12] = [
    "strategy",
    "requests",
    "hit rate",
    "recomputed tokens",
    "uncached input $",
    "writes 5m $",
    "writes 1h $",
    "reads $",
    "output $",
    "input $",
    "total $",
    "mean TTFT ms",
];

fn summary_cells(r: &Replay, s: &CostSplit) -> Vec<String> {
    let sum = r.summary();
    vec![
        r.strategy.clone(),
        sum.requests.to_string(),
        pct(sum.hit_rate),
        sum.recomputed_tokens.to_string(),
        format!("{:.4}", s.uncached_input),
        format!("{:.4}", s.write_5m),
        format!("{:.4}", s.write_1h),
        format!("{:.4}", s.read),
        format!("{:.4}", s.output),
        format!("{:.4}", s.input()),
        format!("{:.4}", s.total()),
        format!("{:.0}", sum.ttft_ms),
    ]
}

const BREAK_HEADER: [&str; 7] = [
    "strategy",
    "request",
    "step",
    "where",
    "reason",
    "recomputed tokens",
    "explanation",
];

fn break_rows(group: &Group<'_>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for r in &group.replays {
        for b in breaks(&r.rows) {
            let mode = r
                .rows
                .get(b.request - 1)
                .map(|x| x.mode.clone())
                .unwrap_or_default();
            out.push(vec![
                r.strategy.clone(),
                b.request.to_string(),
                format!("{} ({mode})", b.step),
                if b.level.is_empty() {
                    b.segment.clone()
                } else {
                    format!("{}: {}", b.level, b.segment)
                },
                b.reason.clone(),
                b.recomputed_tokens.to_string(),
                format!("{} (reuse stopped at {})", b.because, b.segment),
            ]);
        }
    }
    out
}

fn trace_text(group: &Group<'_>) -> String {
    group
        .replays
        .first()
        .map(|r| {
            r.trace
                .entries
                .iter()
                .map(|e| e.to_string().trim_end().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n", header.join(" | "));
    s.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

fn html_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table>\n<tr>");
    for h in header {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr>\n");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

fn strategy_list(strategies: &[Box<dyn Strategy>]) -> Vec<(String, String)> {
    strategies
        .iter()
        .map(|s| (s.name().to_string(), s.summary().to_string()))
        .collect()
}

/// report.md: verdict, summary, charts (PNG links), breaks, trace, Mermaid machine.
pub fn markdown(
    sections: &[Section<'_>],
    charts: &[Vec<Rendered>],
    strategies: &[Box<dyn Strategy>],
) -> String {
    let mut s = String::from("# plancache design review\n\n");
    for (name, summary) in strategy_list(strategies) {
        let _ = writeln!(s, "- **{name}**: {summary}");
    }
    s.push('\n');
    for (sec, ch) in sections.iter().zip(charts) {
        let g = &sec.group;
        let _ = writeln!(s, "## {} ({} cache)\n", g.scenario, g.cache);
        let _ = writeln!(s, "**Verdict.** {}\n", sec.verdict.join(" "));
        let rows: Vec<Vec<String>> = g
            .replays
            .iter()
            .zip(&sec.splits)
            .map(|(r, sp)| summary_cells(r, sp))
            .collect();
        s.push_str(&md_table(&SUMMARY_HEADER, &rows));
        s.push('\n');
        for c in ch {
            let _ = writeln!(s, "![{}](charts/{}.png)\n", c.title, c.stem);
        }
        s.push_str("### Cache breaks\n\n");
        let br = break_rows(g);
        if br.is_empty() {
            s.push_str("No strategy lost its cached prefix after the first request.\n\n");
        } else {
            s.push_str(&md_table(&BREAK_HEADER, &br));
            s.push('\n');
        }
        s.push_str("### Decision trace (identical under every strategy)\n\n```text\n");
        s.push_str(&trace_text(g));
        s.push_str("\n```\n\n### State machine (transitions taken in red, with counts)\n\n");
        if let Some(r) = g.replays.first() {
            s.push_str(&machine::mermaid(&r.trace));
        }
        s.push('\n');
    }
    s
}

const CSS: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:2em auto;max-width:1150px;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}\
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}.verdict{background:#f4f8fc;border-left:4px solid #1f77b4;padding:.6em 1em}\
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:13px}figure{margin:1em 0}svg{max-width:100%;height:auto}";

/// The SVG element of a plotters document (drops an XML prolog if any).
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// report.html: self-contained; charts and the machine are inline SVG.
pub fn html(
    sections: &[Section<'_>],
    charts: &[Vec<Rendered>],
    strategies: &[Box<dyn Strategy>],
) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>plancache design review</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>plancache design review</h1>\n<ul>\n"
    );
    for (name, summary) in strategy_list(strategies) {
        let _ = writeln!(s, "<li><b>{}</b>: {}</li>", esc(&name), esc(&summary));
    }
    s.push_str("</ul>\n");
    for (k, (sec, ch)) in sections.iter().zip(charts).enumerate() {
        let g = &sec.group;
        let _ = writeln!(
            s,
            "<h2>{} ({} cache)</h2>\n<p class=\"verdict\"><b>Verdict.</b> {}</p>",
            esc(g.scenario),
            esc(g.cache),
            esc(&sec.verdict.join(" "))
        );
        let rows: Vec<Vec<String>> = g
            .replays
            .iter()
            .zip(&sec.splits)
            .map(|(r, sp)| summary_cells(r, sp))
            .collect();
        s.push_str(&html_table(&SUMMARY_HEADER, &rows));
        for c in ch {
            let _ = writeln!(s, "<figure>{}</figure>", inline_svg(&c.svg).trim_end());
        }
        s.push_str("<h3>Cache breaks</h3>\n");
        let br = break_rows(g);
        if br.is_empty() {
            s.push_str("<p>No strategy lost its cached prefix after the first request.</p>\n");
        } else {
            s.push_str(&html_table(&BREAK_HEADER, &br));
        }
        s.push_str("<h3>State machine (transitions taken in red, with counts)</h3>\n");
        if let Some(r) = g.replays.first() {
            s.push_str(&machine::svg_with_ids(&r.trace, &format!("m{}", k + 1)));
        }
        let _ = writeln!(
            s,
            "<h3>Decision trace (identical under every strategy)</h3>\n<pre>{}</pre>",
            esc(&trace_text(g))
        );
    }
    s.push_str("</body>\n</html>\n");
    s
}
