//! The account report: Markdown and a self-contained HTML page with the same tables, the
//! cost-by-day chart, the breaks by cause and the top breaks, and the what-if; plus a CSV with
//! one row per day × project × model.

use std::fmt::Write as _;

use super::aggregate::{self, By, Totals};
use super::chart::CostByDay;
use super::figures::day_string;
use super::Account;
use crate::cache::PriceTable;

/// One piece of the report, rendered to Markdown or HTML.
enum Block {
    Heading(String),
    Para(String),
    Table(Vec<String>, Vec<Vec<String>>),
    Chart,
}

/// `$1.05`, `-$1.05` (the sign before the dollar), as the terminal tables print money.
fn usd(x: f64) -> String {
    if x < 0.0 && format!("{:.2}", -x) != "0.00" {
        format!("-${:.2}", -x)
    } else {
        format!("${:.2}", x.abs())
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

const TOTALS_HEADER: [&str; 11] = [
    "sessions",
    "requests",
    "prompt tokens",
    "read pred / billed",
    "written pred / billed",
    "hit rate pred / billed",
    "output tokens",
    "cost pred",
    "cost billed",
    "breaks pred / billed",
    "predicted breaks by cause",
];

fn totals_cells(t: &Totals) -> Vec<String> {
    let causes: Vec<String> = t.causes.iter().map(|(c, n)| format!("{c} {n}")).collect();
    vec![
        t.sessions.to_string(),
        t.predicted.requests.to_string(),
        t.predicted.prompt.to_string(),
        format!("{} / {}", t.predicted.read, t.billed.read),
        format!("{} / {}", t.predicted.writes(), t.billed.writes()),
        format!(
            "{} / {}",
            pct(t.predicted.hit_rate()),
            pct(t.billed.hit_rate())
        ),
        t.output_tokens.to_string(),
        usd(t.predicted_usd()),
        usd(t.billed_usd()),
        format!("{} / {}", t.predicted_breaks, t.billed_breaks),
        if causes.is_empty() {
            "-".into()
        } else {
            causes.join("; ")
        },
    ]
}

fn breakdown_table(a: &Account, by: By) -> Block {
    let mut header = vec![by.title().to_string()];
    header.extend(TOTALS_HEADER.iter().map(|s| s.to_string()));
    let rows = aggregate::breakdown(&a.sessions, by)
        .into_iter()
        .map(|(k, t)| {
            let mut r = vec![k];
            r.extend(totals_cells(&t));
            r
        })
        .collect();
    Block::Table(header, rows)
}

/// The chart's data: per day, predicted and billed dollars.
pub fn cost_by_day(a: &Account) -> CostByDay {
    CostByDay {
        title: "Cost by day: predicted and billed".into(),
        days: aggregate::breakdown(&a.sessions, By::Day)
            .into_iter()
            .map(|(d, t)| (d, t.predicted_usd(), t.billed_usd()))
            .collect(),
    }
}

fn blocks(a: &Account, prices: &PriceTable, top: usize) -> Vec<Block> {
    let mut b = overview_blocks(a, top);
    break_blocks(a, prices, top, &mut b);
    whatif_blocks(a, &mut b);
    failure_blocks(a, &mut b);
    b
}

/// The account's paragraph, totals and breakdowns, up to the breaks' heading.
fn overview_blocks(a: &Account, top: usize) -> Vec<Block> {
    let o = &a.options;
    let all = aggregate::overall(&a.sessions);
    let warm = a.sessions.iter().filter(|s| s.warm_from.is_some()).count();
    let kept = a.sessions.iter().filter(|s| s.kept_warm).count();
    vec![
        Block::Heading("Account".into()),
        Block::Para(format!(
            "{} sessions ({} files, {:.1} MB) replayed with strategy `{}` on cache model `{}` (Codex sessions: `openai`) and the TTLs each transcript wrote. Leading tools/system block shared across sessions: {}. A break is a request reading less than {:.0}% of the previous prompt of its stream. Predictions come from the transcripts' text, sizes and send times; billed figures are the usage records, shown beside them and never used to make them. Cost = input side at the model's prices + logged output tokens (the same on both sides).",
            a.sessions.len(),
            a.files,
            a.bytes as f64 / 1e6,
            o.strategy,
            o.cache,
            match o.sharing {
                super::Sharing::Timeline => format!("on the account timeline ({warm} sessions started with it cached, {kept} of them had it kept alive throughout by the account's requests)"),
                super::Sharing::None => "none (every session starts cold)".into(),
            },
            o.break_threshold * 100.0
        )),
        Block::Table(
            TOTALS_HEADER.iter().map(|s| s.to_string()).collect(),
            vec![totals_cells(&all)],
        ),
        Block::Heading("Cost by day".into()),
        Block::Chart,
        breakdown_table(a, By::Day),
        Block::Heading("By project".into()),
        breakdown_table(a, By::Project),
        Block::Heading("By model".into()),
        breakdown_table(a, By::Model),
        Block::Heading(format!("Top {top} breaks (predicted, by tokens processed again)")),
    ]
}

/// The top predicted breaks, by tokens processed again.
fn break_blocks(a: &Account, prices: &PriceTable, top: usize, b: &mut Vec<Block>) {
    let breaks = aggregate::top_breaks(&a.sessions, prices, top);
    if breaks.is_empty() {
        b.push(Block::Para("No predicted break.".into()));
    } else {
        b.push(Block::Table(
            [
                "project",
                "session",
                "stream",
                "request",
                "sent (UTC day)",
                "cause",
                "where",
                "tokens again",
                "extra cost",
                "billed a break too",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            breaks
                .iter()
                .map(|r| {
                    vec![
                        r.project.clone(),
                        r.session.clone(),
                        r.stream.clone(),
                        r.request.to_string(),
                        day_string(r.sent_at_ms),
                        r.cause.clone(),
                        r.reason.clone(),
                        r.lost_tokens.to_string(),
                        if r.extra_usd < 0.0 {
                            format!("-${:.4}", -r.extra_usd)
                        } else {
                            format!("${:.4}", r.extra_usd)
                        },
                        r.billed_break.to_string(),
                    ]
                })
                .collect(),
        ));
    }
}

/// The what-if settings beside the harness's own, with the cheapest named.
fn whatif_blocks(a: &Account, b: &mut Vec<Block>) {
    b.push(Block::Heading("What if".into()));
    let base = a.whatif.first().map_or(0.0, |w| w.total_usd());
    b.push(Block::Para(format!(
        "The same sessions ({} of them; {} left out because some setting could not replay them) under each setting, predicted. The first row is the harness's own setting; saving = its cost − the setting's cost (positive: the setting is cheaper). Each keep-alive ping re-sends its stream's last request with max_tokens = 1 and is priced like any request (mostly a cache read, one output token).",
        a.sessions.len() - a.whatif_excluded.len(),
        a.whatif_excluded.len()
    )));
    let cheapest = a
        .whatif
        .iter()
        .skip(1)
        .min_by(|x, y| x.total_usd().total_cmp(&y.total_usd()));
    if let Some(w) = cheapest {
        let saving = base - w.total_usd();
        b.push(Block::Para(if saving > 0.0 {
            format!(
                "Cheapest: {}, {} less than the harness's own setting ({}).",
                w.setting.label(),
                usd(saving),
                pct(saving / base)
            )
        } else {
            "No what-if setting is cheaper than the harness's own.".to_string()
        }));
    }
    b.push(Block::Table(
        [
            "setting",
            "read",
            "written",
            "hit rate",
            "breaks",
            "pings",
            "ping cost",
            "cost",
            "saving",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        a.whatif
            .iter()
            .map(|w| {
                vec![
                    w.setting.label(),
                    w.predicted.read.to_string(),
                    w.predicted.writes().to_string(),
                    pct(w.predicted.hit_rate()),
                    w.breaks.to_string(),
                    w.pings.to_string(),
                    usd(w.ping_cost.usd + w.ping_output_usd),
                    usd(w.total_usd()),
                    format!(
                        "{} ({})",
                        usd(base - w.total_usd()),
                        pct(if base > 0.0 {
                            (base - w.total_usd()) / base
                        } else {
                            0.0
                        })
                    ),
                ]
            })
            .collect(),
    ));
}

/// The sessions left out of the figures or of the what-ifs, and why.
fn failure_blocks(a: &Account, b: &mut Vec<Block>) {
    if !a.failures.is_empty() || !a.whatif_excluded.is_empty() {
        b.push(Block::Heading("Sessions not counted".into()));
        b.push(Block::Table(
            vec!["session".into(), "why".into()],
            a.failures
                .iter()
                .map(|f| vec![f.session.clone(), f.message.clone()])
                .chain(
                    a.whatif_excluded
                        .iter()
                        .map(|f| vec![f.session.clone(), format!("what-if only: {}", f.message)]),
                )
                .collect(),
        ));
    }
}

/// account.md (the chart as a link to `cost-by-day.svg`).
pub fn markdown(a: &Account, prices: &PriceTable, top: usize) -> String {
    let mut s = String::from("# plancache account\n\n");
    for block in blocks(a, prices, top) {
        match block {
            Block::Heading(h) => {
                let _ = writeln!(s, "## {h}\n");
            }
            Block::Para(p) => {
                let _ = writeln!(s, "{p}\n");
            }
            Block::Table(h, rows) => {
                let _ = writeln!(s, "| {} |", h.join(" | "));
                let _ = writeln!(s, "|{}", "---|".repeat(h.len()));
                for r in rows {
                    let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
                    let _ = writeln!(s, "| {} |", cells.join(" | "));
                }
                s.push('\n');
            }
            Block::Chart => s.push_str("![Cost by day](cost-by-day.svg)\n\n"),
        }
    }
    s
}

fn esc(s: &str) -> String {
    code_spans(
        &s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;"),
    )
}

/// Markdown code spans (`` `x` ``) as `<code>x</code>`: account.html shows no literal backticks.
fn code_spans(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len() < 3 {
        return s.replace('`', "&#96;");
    }
    let mut out = String::with_capacity(s.len() + 16);
    let pairs = (parts.len() - 1) / 2 * 2;
    for (i, p) in parts.iter().enumerate() {
        out.push_str(p);
        if i < pairs {
            out.push_str(if i % 2 == 0 { "<code>" } else { "</code>" });
        } else if i + 1 < parts.len() {
            out.push_str("&#96;");
        }
    }
    out
}

const CSS: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}\
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}svg{max-width:100%;height:auto}";

/// account.html: self-contained, the chart inline.
pub fn html(a: &Account, prices: &PriceTable, top: usize, chart_svg: &str) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>plancache account</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>plancache account</h1>\n"
    );
    for block in blocks(a, prices, top) {
        match block {
            Block::Heading(h) => {
                let _ = writeln!(s, "<h2>{}</h2>", esc(&h));
            }
            Block::Para(p) => {
                let _ = writeln!(s, "<p>{}</p>", esc(&p));
            }
            Block::Table(h, rows) => {
                s.push_str("<table>\n<tr>");
                for c in h {
                    let _ = write!(s, "<th>{}</th>", esc(&c));
                }
                s.push_str("</tr>\n");
                for r in rows {
                    s.push_str("<tr>");
                    for c in r {
                        let _ = write!(s, "<td>{}</td>", esc(&c));
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</table>\n");
            }
            Block::Chart => {
                let svg = chart_svg
                    .find("<svg")
                    .map_or(chart_svg, |i| &chart_svg[i..]);
                let _ = writeln!(s, "<figure>{}</figure>", svg.trim_end());
            }
        }
    }
    s.push_str("</body>\n</html>\n");
    s
}

/// account.csv: one row per day × project × model.
pub fn csv(a: &Account) -> Result<Vec<u8>, super::AccountError> {
    use std::collections::BTreeMap;
    let mut groups: BTreeMap<(String, String, String), Totals> = BTreeMap::new();
    for s in &a.sessions {
        let mut seen = std::collections::BTreeSet::new();
        for r in &s.requests {
            let key = (
                day_string(r.sent_at_ms),
                s.files.project.clone(),
                r.model.clone(),
            );
            let t = groups.entry(key.clone()).or_default();
            if seen.insert(key) {
                t.sessions += 1;
            }
            t.add(r);
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| super::AccountError::Csv(e.to_string());
    w.write_record([
        "day",
        "project",
        "model",
        "sessions",
        "requests",
        "prompt_tokens",
        "predicted_input",
        "predicted_write",
        "predicted_read",
        "billed_input",
        "billed_write",
        "billed_read",
        "output_tokens",
        "predicted_hit_rate",
        "billed_hit_rate",
        "predicted_usd",
        "billed_usd",
        "predicted_breaks",
        "billed_breaks",
    ])
    .map_err(err)?;
    for ((day, project, model), t) in groups {
        w.write_record([
            day,
            project,
            model,
            t.sessions.to_string(),
            t.predicted.requests.to_string(),
            t.predicted.prompt.to_string(),
            t.predicted.input.to_string(),
            t.predicted.writes().to_string(),
            t.predicted.read.to_string(),
            t.billed.input.to_string(),
            t.billed.writes().to_string(),
            t.billed.read.to_string(),
            t.output_tokens.to_string(),
            format!("{:.4}", t.predicted.hit_rate()),
            format!("{:.4}", t.billed.hit_rate()),
            format!("{:.6}", t.predicted_usd()),
            format!("{:.6}", t.billed_usd()),
            t.predicted_breaks.to_string(),
            t.billed_breaks.to_string(),
        ])
        .map_err(err)?;
    }
    w.into_inner()
        .map_err(|e| super::AccountError::Csv(e.to_string()))
}

/// sessions.csv: one row per session, in timeline order, with the session that left the leading
/// block alive at its start.
pub fn sessions_csv(a: &Account) -> Result<Vec<u8>, super::AccountError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| super::AccountError::Csv(e.to_string());
    w.write_record([
        "project",
        "session",
        "kind",
        "files",
        "bytes",
        "first_request_day",
        "warm_from",
        "kept_warm",
        "requests",
        "prompt_tokens",
        "predicted_read",
        "billed_read",
        "predicted_usd",
        "billed_usd",
        "predicted_breaks",
        "billed_breaks",
        "skipped_records",
    ])
    .map_err(err)?;
    for s in &a.sessions {
        let mut t = Totals::default();
        for r in &s.requests {
            t.add(r);
        }
        w.write_record([
            s.files.project.clone(),
            s.files.session_id.clone(),
            format!("{:?}", s.files.kind),
            s.files.files().len().to_string(),
            s.bytes.to_string(),
            s.requests
                .iter()
                .map(|r| r.sent_at_ms)
                .min()
                .map_or(String::new(), day_string),
            s.warm_from.clone().unwrap_or_default(),
            s.kept_warm.to_string(),
            t.predicted.requests.to_string(),
            t.predicted.prompt.to_string(),
            t.predicted.read.to_string(),
            t.billed.read.to_string(),
            format!("{:.6}", t.predicted_usd()),
            format!("{:.6}", t.billed_usd()),
            t.predicted_breaks.to_string(),
            t.billed_breaks.to_string(),
            s.skipped_records.to_string(),
        ])
        .map_err(err)?;
    }
    w.into_inner()
        .map_err(|e| super::AccountError::Csv(e.to_string()))
}
