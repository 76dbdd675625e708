//! The design-review report: `report.html` (self-contained, charts inline as SVG) and `report.md`
//! (for a pull request), each with a verdict computed from the data, a summary table, the cache
//! breaks explained, the decision trace and the state machine with the transitions taken.

use super::ChartError;
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
    /// The replays of this scenario under this cache model, one per strategy.
    pub group: Group<'a>,
    /// Each replay's cost split, in the order of `group.replays`.
    pub splits: Vec<CostSplit>,
    /// The verdict line ranking the strategies by total cost.
    pub verdict: Vec<String>,
}

/// Builds the sections of a run (no charts).
pub fn sections<'a>(
    run: &'a RunReport,
    prices: &PriceTable,
) -> Result<Vec<Section<'a>>, ChartError> {
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

/// The verdict of one scenario and cache model: one line ranking the strategies by total cost
/// (prompt + output + storage: the `cost $` of `plancache run`), cheapest first. Each entry gives the cost, the hit rate, what the cheapest saves
/// over it, and the cause of the breaks it has beyond the cheapest's. Strategies with the same
/// cost and the same breaks share one entry (`permission-mode = masked`).
pub fn verdict(group: &Group<'_>, splits: &[CostSplit]) -> Vec<String> {
    let reps = &group.replays;
    if reps.is_empty() {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..reps.len()).collect();
    // Stable: ties keep run order.
    order.sort_by(|&a, &b| splits[a].total().total_cmp(&splits[b].total()));
    let all_breaks: Vec<Vec<Break>> = reps.iter().map(|r| breaks(&r.rows)).collect();
    let same_breaks = |a: &[Break], b: &[Break]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.request == y.request && x.because == y.because)
    };
    // Entries: (members, representative index).
    let mut entries: Vec<(Vec<usize>, usize)> = Vec::new();
    for &i in &order {
        let cost = format!("{:.4}", splits[i].total());
        match entries.iter_mut().find(|(_, rep)| {
            format!("{:.4}", splits[*rep].total()) == cost
                && same_breaks(&all_breaks[*rep], &all_breaks[i])
        }) {
            Some((members, _)) => members.push(i),
            None => entries.push((vec![i], i)),
        }
    }
    let best = entries[0].1;
    let best_total = splits[best].total();
    let best_name = &reps[best].strategy;
    let mut parts = Vec::new();
    for (rank, (members, rep)) in entries.iter().enumerate() {
        let names: Vec<&str> = members.iter().map(|&i| reps[i].strategy.as_str()).collect();
        let total = splits[*rep].total();
        let hit = reps[*rep].summary().hit_rate * 100.0;
        let mut notes = vec![format!("hit {hit:.0}%")];
        if rank > 0 && total > 0.0 {
            let saved = (total - best_total) / total * 100.0;
            notes.push(format!("{best_name} saves {saved:.0}%"));
        }
        let own = &all_breaks[*rep];
        if rank == 0 {
            notes.push(if own.is_empty() {
                "no breaks".to_string()
            } else {
                format!("breaks: {}", causes(own))
            });
        } else {
            let extra: Vec<Break> = own
                .iter()
                .filter(|b| {
                    !all_breaks[best]
                        .iter()
                        .any(|x| x.request == b.request && x.because == b.because)
                })
                .cloned()
                .collect();
            notes.push(if extra.is_empty() {
                "no extra breaks".to_string()
            } else {
                format!("extra breaks: {}", causes(&extra))
            });
        }
        parts.push(format!(
            "{}. {} ${total:.4} ({})",
            rank + 1,
            names.join(" = "),
            notes.join("; ")
        ));
    }
    vec![format!(
        "Total cost (prompt + output: cost $ in plancache run), cheapest first: {}.",
        parts.join(", ")
    )]
}

/// "tools changed at requests 2 and 6, messages changed at request 4".
fn causes(bs: &[Break]) -> String {
    let mut by_cause: Vec<(String, Vec<usize>)> = Vec::new();
    for b in bs {
        match by_cause.iter_mut().find(|(c, _)| *c == b.short) {
            Some((_, v)) => v.push(b.request),
            None => by_cause.push((b.short.clone(), vec![b.request])),
        }
    }
    by_cause
        .iter()
        .map(|(cause, reqs)| {
            let word = if reqs.len() == 1 {
                "request"
            } else {
                "requests"
            };
            if reqs.len() > 6 {
                format!(
                    "{cause} at {} {word} ({}, ...)",
                    reqs.len(),
                    join_numbers(&reqs[..3]).replace(" and ", ", ")
                )
            } else {
                format!("{cause} at {word} {}", join_numbers(reqs))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes `dir/requests.csv`, `dir/summary.csv`, `dir/charts/*`, `dir/report.html`, `dir/report.md`.
pub fn write(
    dir: &Path,
    run: &RunReport,
    prices: &PriceTable,
    strategies: &[Box<dyn Strategy>],
) -> Result<(), ChartError> {
    let sections = sections(run, prices)?;
    let chart_dir = dir.join("charts");
    // Each section's charts are independent files: rendered in parallel, kept in section order.
    let charts = {
        use rayon::prelude::*;
        sections
            .par_iter()
            .map(|s| render_group(&s.group, prices, Some(&chart_dir)))
            .collect::<Result<Vec<_>, ChartError>>()?
    };
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

/// Escapes `&`, `<` and `>` for HTML text.
fn esc(s: &str) -> String {
    html_escape::encode_text(s).into_owned()
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Summary table cells per replay: strategy, requests, hit rate, recomputed, the cost split, the
/// prompt and total sums, TTFT. The 5-minute write column is plain "cache writes $" under a
/// cache model whose writes have no TTL class.
fn summary_header(ttl_classes: bool) -> [&'static str; 13] {
    [
        "strategy",
        "requests",
        "hit rate",
        "recomputed tokens",
        "uncached input $",
        if ttl_classes {
            "cache writes 5m $"
        } else {
            "cache writes $"
        },
        "cache writes 1h $",
        "cache reads $",
        "output $",
        "cache storage $",
        "prompt $",
        "total $",
        "mean TTFT ms",
    ]
}

/// What the summed columns sum, said once under each summary table.
pub const SUMS_NOTE: &str = "prompt $ = uncached input + cache writes + cache reads; total $ = prompt $ + output $ + cache storage $ (the cost $ of plancache run); the verdict ranks by total $.";

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
        format!("{:.4}", s.storage),
        format!("{:.4}", s.prompt()),
        format!("{:.4}", s.total()),
        format!("{:.0}", sum.ttft_ms),
    ]
}

/// The summary table of a section without the cost columns that are zero in every row (a
/// cache model without 1-hour writes, a provider that bills no writes or no storage), so the
/// table shows only what this run paid for.
fn summary_table(sec: &Section<'_>) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let rows: Vec<Vec<String>> = sec
        .group
        .replays
        .iter()
        .zip(&sec.splits)
        .map(|(r, sp)| summary_cells(r, sp))
        .collect();
    let header = summary_header(sec.splits.first().is_none_or(|s| s.ttl_classes));
    let cost_columns = 4..10;
    let keep: Vec<usize> = (0..header.len())
        .filter(|c| {
            !cost_columns.contains(c)
                || rows.iter().any(|r| {
                    r[*c].parse::<f64>().is_ok_and(|v| v != 0.0) || r[*c].parse::<f64>().is_err()
                })
        })
        .collect();
    (
        keep.iter().map(|&c| header[c]).collect(),
        rows.iter()
            .map(|r| keep.iter().map(|&c| r[c].clone()).collect())
            .collect(),
    )
}

/// Anchor of a scenario's section.
fn scenario_id(scenario: &str) -> String {
    format!("scenario-{}", data::slug(scenario))
}

/// Anchor of one scenario x cache block.
fn group_id(g: &Group<'_>) -> String {
    format!("{}--{}", data::slug(g.scenario), data::slug(g.cache))
}

/// Scenarios in run order, each with the indices of its sections.
fn by_scenario<'s>(sections: &'s [Section<'_>]) -> Vec<(&'s str, Vec<usize>)> {
    let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, sec) in sections.iter().enumerate() {
        match out.iter_mut().find(|(n, _)| *n == sec.group.scenario) {
            Some((_, v)) => v.push(i),
            None => out.push((sec.group.scenario, vec![i])),
        }
    }
    out
}

/// The overview: one row per scenario x cache model, one column per strategy (total cost and
/// hit rate), the cheapest named last. Cells are (text, link) pairs; the cheapest cost is
/// marked with `*`.
/// A table cell with an optional in-page link.
type Cell = (String, Option<String>);

fn overview(sections: &[Section<'_>]) -> (Vec<String>, Vec<Vec<Cell>>) {
    let mut strategies: Vec<&str> = Vec::new();
    for sec in sections {
        for r in &sec.group.replays {
            if !strategies.contains(&r.strategy.as_str()) {
                strategies.push(&r.strategy);
            }
        }
    }
    let mut header = vec!["scenario".to_string(), "cache".to_string()];
    header.extend(strategies.iter().map(|s| s.to_string()));
    header.push("cheapest".to_string());
    let rows = sections
        .iter()
        .map(|sec| {
            let g = &sec.group;
            let best = (0..g.replays.len())
                .min_by(|&a, &b| sec.splits[a].total().total_cmp(&sec.splits[b].total()));
            let best_cost = best.map(|b| format!("{:.4}", sec.splits[b].total()));
            let mut row = vec![
                (g.scenario.to_string(), Some(scenario_id(g.scenario))),
                (g.cache.to_string(), Some(group_id(g))),
            ];
            for st in &strategies {
                let cell = g.replays.iter().position(|r| r.strategy == *st).map(|i| {
                    let cost = format!("{:.4}", sec.splits[i].total());
                    let mark = if Some(&cost) == best_cost.as_ref() {
                        "*"
                    } else {
                        ""
                    };
                    format!(
                        "{mark}${cost} / {:.0}%",
                        g.replays[i].summary().hit_rate * 100.0
                    )
                });
                row.push((cell.unwrap_or_default(), None));
            }
            let cheapest: Vec<&str> = g
                .replays
                .iter()
                .zip(&sec.splits)
                .filter(|(_, sp)| Some(format!("{:.4}", sp.total())) == best_cost)
                .map(|(r, _)| r.strategy.as_str())
                .collect();
            row.push((cheapest.join(" = "), None));
            row
        })
        .collect();
    (header, rows)
}

/// The overview's rows grouped by scenario (rows are in section order): the scenario, a line
/// saying which strategy is cheapest under how many of its cache models, and its row indices.
fn overview_blocks(
    sections: &[Section<'_>],
    rows: &[Vec<Cell>],
) -> Vec<(String, String, Vec<usize>)> {
    by_scenario(sections)
        .into_iter()
        .map(|(scenario, idx)| {
            let mut wins: Vec<(String, usize)> = Vec::new();
            for &i in &idx {
                let who = rows[i].last().map(|c| c.0.clone()).unwrap_or_default();
                match wins.iter_mut().find(|(w, _)| *w == who) {
                    Some((_, n)) => *n += 1,
                    None => wins.push((who, 1)),
                }
            }
            wins.sort_by_key(|w| std::cmp::Reverse(w.1));
            let n = idx.len();
            let line = wins
                .iter()
                .map(|(w, k)| format!("{w} under {k} of {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            (
                scenario.to_string(),
                format!("cheapest: {line} cache models"),
                idx,
            )
        })
        .collect()
}

/// Whether the overview is one flat table (one cache model per scenario) or one collapsible
/// block per scenario (several: `--cache all` gives 12 rows per scenario).
fn grouped(sections: &[Section<'_>]) -> bool {
    by_scenario(sections).iter().any(|(_, idx)| idx.len() > 1)
}

/// The overview's first sentence: what the cells are and what the verdicts rank by.
const OVERVIEW_NOTE: &str = "Total cost in USD (prompt + output: the cost $ of plancache run, and what every verdict ranks by) / hit rate per scenario, cache model and strategy; the cheapest in bold.";

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
                .map(|x| x.mode.to_string())
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

/// Whether every non-empty cell of column `c` is a number (with `$`, `%` or `*` marks): such
/// columns are right-aligned, text columns left-aligned.
fn numeric_column(rows: &[Vec<String>], c: usize) -> bool {
    rows.iter().all(|r| {
        let cell = r.get(c).map(String::as_str).unwrap_or("");
        // `$0.1373 / 82%`, `*$0.0749 / 82%`, `82.4%`, `1028`: digits and number punctuation only.
        cell.chars().all(|ch| {
            ch.is_ascii_digit() || matches!(ch, '.' | '$' | '%' | '*' | ',' | ' ' | '/' | '-' | '+')
        })
    })
}

fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|", header.join(" | "));
    for c in 0..header.len() {
        s.push_str(if numeric_column(rows, c) {
            "---:|"
        } else {
            ":---|"
        });
    }
    s.push('\n');
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

fn html_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let linked: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| r.iter().map(|c| (c.clone(), None)).collect())
        .collect();
    html_table_linked(header, &linked)
}

/// An HTML table whose cells may link to an anchor; text columns are left-aligned.
fn html_table_linked(header: &[&str], rows: &[Vec<Cell>]) -> String {
    let plain: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|(t, _)| t.clone()).collect())
        .collect();
    let align: Vec<&str> = (0..header.len())
        .map(|c| if numeric_column(&plain, c) { "n" } else { "t" })
        .collect();
    // In a box that scrolls sideways: a table wider than the page (many strategies) never
    // spills over the blocks around it.
    let mut s = String::from("<div class=\"wide\"><table>\n<tr>");
    for (h, a) in header.iter().zip(&align) {
        let _ = write!(s, "<th class=\"{a}\">{}</th>", esc(h));
    }
    s.push_str("</tr>\n");
    for r in rows {
        s.push_str("<tr>");
        for ((c, link), a) in r.iter().zip(&align) {
            let text = match c.strip_prefix('*') {
                Some(best) => format!("<b>{}</b>", esc(best)),
                None => esc(c),
            };
            // An overview cell `$0.1598 / 82%`: cost and hit rate on two lines in every cell,
            // so a 9-strategy table fits the page without some cells wrapping and others not.
            let text = if *a == "n" {
                text.replace(" / ", " /<br>")
            } else {
                text
            };
            match link {
                Some(id) => {
                    let _ = write!(s, "<td class=\"{a}\"><a href=\"#{id}\">{text}</a></td>");
                }
                None => {
                    let _ = write!(s, "<td class=\"{a}\">{text}</td>");
                }
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table></div>\n");
    s
}

fn strategy_list(strategies: &[Box<dyn Strategy>]) -> Vec<(String, String)> {
    strategies
        .iter()
        .map(|s| (s.name().to_string(), s.summary().to_string()))
        .collect()
}

/// report.md: the overview table and contents first, then per scenario a collapsible block per
/// cache model (verdict, summary, charts, breaks, trace, Mermaid machine).
pub fn markdown(
    sections: &[Section<'_>],
    charts: &[Vec<Rendered>],
    strategies: &[Box<dyn Strategy>],
) -> String {
    let mut s = String::from("# plancache design review\n\n");
    let _ = write!(
        s,
        "<a id=\"overview\"></a>\n\n## Overview\n\n{OVERVIEW_NOTE}\n\n"
    );
    let (header, rows) = overview(sections);
    let md_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|(t, link)| match (t.strip_prefix('*'), link) {
                    (_, Some(id)) => format!("[{t}](#{id})"),
                    (Some(best), None) => format!("**{best}**"),
                    (None, None) => t.clone(),
                })
                .collect()
        })
        .collect();
    if grouped(sections) {
        // One block per scenario, its table without the scenario column.
        let header_refs: Vec<&str> = header[1..].iter().map(String::as_str).collect();
        for (scenario, line, idx) in overview_blocks(sections, &rows) {
            let _ = writeln!(
                s,
                "<details>\n<summary><b>{}</b>: {}</summary>\n",
                esc(&scenario),
                esc(&line)
            );
            let block: Vec<Vec<String>> = idx.iter().map(|&i| md_rows[i][1..].to_vec()).collect();
            s.push_str(&md_table(&header_refs, &block));
            s.push_str("\n</details>\n\n");
        }
    } else {
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        s.push_str(&md_table(&header_refs, &md_rows));
    }
    s.push_str("\n## Contents\n\n- [Strategies](#strategies)\n");
    for (scenario, idx) in by_scenario(sections) {
        let caches: Vec<String> = idx
            .iter()
            .map(|&i| {
                format!(
                    "[{}](#{})",
                    sections[i].group.cache,
                    group_id(&sections[i].group)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "- [{scenario}](#{}): {}",
            scenario_id(scenario),
            caches.join(", ")
        );
    }
    s.push_str("\n<a id=\"strategies\"></a>\n\n## Strategies\n\n");
    for (name, summary) in strategy_list(strategies) {
        let _ = writeln!(s, "- **{name}**: {summary}");
    }
    s.push('\n');
    for (scenario, idx) in by_scenario(sections) {
        let _ = writeln!(
            s,
            "<a id=\"{}\"></a>\n\n## {scenario}\n",
            scenario_id(scenario)
        );
        for (n, &i) in idx.iter().enumerate() {
            md_group(&mut s, &sections[i], &charts[i], n == 0);
        }
    }
    s
}

/// One scenario's block for one cache model in report.md: verdict, summary, charts, breaks,
/// trace and machine (`open`: shown unfolded).
fn md_group(s: &mut String, sec: &Section<'_>, ch: &[Rendered], open: bool) {
    let g = &sec.group;
    let _ = writeln!(
        s,
        "<a id=\"{}\"></a>\n<details{}>\n<summary><b>{} cache</b>: {}</summary>\n",
        group_id(g),
        if open { " open" } else { "" },
        g.cache,
        esc(&sec.verdict.join(" "))
    );
    let (header, rows) = summary_table(sec);
    s.push_str(&md_table(&header, &rows));
    let _ = writeln!(s, "\n{SUMS_NOTE}\n");
    for c in ch {
        let _ = writeln!(s, "![{}](charts/{}.png)\n", c.title, c.stem);
    }
    s.push_str("**Cache breaks**\n\n");
    let br = break_rows(g);
    if br.is_empty() {
        s.push_str("No strategy lost its cached prefix after the first request.\n\n");
    } else {
        s.push_str(&md_table(&BREAK_HEADER, &br));
        s.push('\n');
    }
    s.push_str("**Decision trace** (identical under every strategy)\n\n```text\n");
    s.push_str(&trace_text(g));
    s.push_str("\n```\n\n**State machine** (transitions taken in red, with counts)\n\n");
    if let Some(r) = g.replays.first() {
        s.push_str(&machine::mermaid(&r.trace));
    }
    s.push_str("\n</details>\n\n");
}

const CSS: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:2em auto;max-width:1150px;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px}\
th{background:#f0f0f0}.n{text-align:right;white-space:nowrap}.t{text-align:left}th.n{white-space:normal}td.t:first-child{white-space:nowrap}.wide{overflow-x:auto}#overview~.wide table{font-size:13px}.verdict{background:#f4f8fc;border-left:4px solid #1f77b4;padding:.6em 1em}\
details{border:1px solid #ddd;border-radius:4px;margin:.8em 0;padding:.4em .8em}summary{cursor:pointer;padding:.3em 0}\
summary h3{display:inline;margin:0}nav ol{line-height:1.6}\
.note{font-size:13px;color:#555}details.ov{margin:.3em 0}details.ov table{font-size:13px}\
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:13px}figure{margin:1em 0}svg{max-width:100%;height:auto}";

/// The SVG element of a plotters document (drops an XML prolog if any).
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// report.html: self-contained (charts and the machine are inline SVG). It opens at the
/// overview table and the contents; each scenario has one collapsible block per cache model.
pub fn html(
    sections: &[Section<'_>],
    charts: &[Vec<Rendered>],
    strategies: &[Box<dyn Strategy>],
) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>plancache design review</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>plancache design review</h1>\n"
    );
    let scenarios = by_scenario(sections);
    let _ = writeln!(
        s,
        "<h2 id=\"overview\">Overview</h2>\n<p>{} Names link to their section.</p>",
        esc(OVERVIEW_NOTE)
    );
    let (header, rows) = overview(sections);
    if grouped(sections) {
        // One block per scenario: its summary says who is cheapest, its table has a row per
        // cache model (the scenario column is the block's name).
        let header_refs: Vec<&str> = header[1..].iter().map(String::as_str).collect();
        for (scenario, line, idx) in overview_blocks(sections, &rows) {
            let _ = writeln!(
                s,
                "<details class=\"ov\">\n<summary><a href=\"#{}\">{}</a>: {}</summary>",
                scenario_id(&scenario),
                esc(&scenario),
                esc(&line)
            );
            let block: Vec<Vec<Cell>> = idx.iter().map(|&i| rows[i][1..].to_vec()).collect();
            s.push_str(&html_table_linked(&header_refs, &block));
            s.push_str("</details>\n");
        }
    } else {
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        s.push_str(&html_table_linked(&header_refs, &rows));
    }
    s.push_str("<nav id=\"contents\">\n<h2>Contents</h2>\n<ol>\n<li><a href=\"#overview\">Overview</a></li>\n<li><a href=\"#strategies\">Strategies</a></li>\n");
    for (scenario, idx) in &scenarios {
        let caches: Vec<String> = idx
            .iter()
            .map(|&i| {
                let g = &sections[i].group;
                format!("<a href=\"#{}\">{}</a>", group_id(g), esc(g.cache))
            })
            .collect();
        let _ = writeln!(
            s,
            "<li><a href=\"#{}\">{}</a>: {}</li>",
            scenario_id(scenario),
            esc(scenario),
            caches.join(", ")
        );
    }
    s.push_str("</ol>\n</nav>\n<h2 id=\"strategies\">Strategies</h2>\n<ul>\n");
    for (name, summary) in strategy_list(strategies) {
        let _ = writeln!(s, "<li><b>{}</b>: {}</li>", esc(&name), esc(&summary));
    }
    s.push_str("</ul>\n");
    for (scenario, idx) in &scenarios {
        let _ = writeln!(
            s,
            "<section id=\"{}\">\n<h2>{}</h2>",
            scenario_id(scenario),
            esc(scenario)
        );
        for (n, &i) in idx.iter().enumerate() {
            html_group(&mut s, &sections[i], &charts[i], n == 0, i + 1);
        }
        s.push_str("</section>\n");
    }
    s.push_str("</body>\n</html>\n");
    s
}

/// One scenario's block for one cache model in report.html (`open`: shown unfolded; `number`
/// names its state machine's SVG ids).
fn html_group(s: &mut String, sec: &Section<'_>, ch: &[Rendered], open: bool, number: usize) {
    let g = &sec.group;
    let _ = writeln!(
        s,
        "<details id=\"{}\"{}>\n<summary><h3>{} cache</h3></summary>\n<p class=\"verdict\"><b>Verdict.</b> {}</p>",
        group_id(g),
        if open { " open" } else { "" },
        esc(g.cache),
        esc(&sec.verdict.join(" "))
    );
    let (header, rows) = summary_table(sec);
    s.push_str(&html_table(&header, &rows));
    let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(SUMS_NOTE));
    for c in ch {
        let _ = writeln!(s, "<figure>{}</figure>", inline_svg(&c.svg).trim_end());
    }
    s.push_str("<h4>Cache breaks</h4>\n");
    let br = break_rows(g);
    if br.is_empty() {
        s.push_str("<p>No strategy lost its cached prefix after the first request.</p>\n");
    } else {
        s.push_str(&html_table(&BREAK_HEADER, &br));
    }
    s.push_str("<h4>State machine (transitions taken in red, with counts)</h4>\n");
    if let Some(r) = g.replays.first() {
        s.push_str(&machine::svg_with_ids(&r.trace, &format!("m{number}")));
    }
    let _ = writeln!(
        s,
        "<h4>Decision trace (identical under every strategy)</h4>\n<pre>{}</pre>\n</details>",
        esc(&trace_text(g))
    );
}
