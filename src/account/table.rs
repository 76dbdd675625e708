//! What `account` prints: a terminal table of the chosen view (ccusage's columns, with
//! plancache's prediction beside the billed cost and breaks), the predicted breaks by cause and
//! the what-if; or the same as JSON (`--json`). Numbers carry thousands separators; money is
//! `$1,234.56` / `-$1.05`.

use comfy_table::{presets, Cell, CellAlignment, Table};
use num_format::{Locale, ToFormattedString};
use serde_json::{json, Value};

use super::aggregate::Totals;
use super::select::Selection;
use super::views::{self, Row, View};
use super::Account;

/// `1234567` as `1,234,567`.
pub fn count(n: u64) -> String {
    n.to_formatted_string(&Locale::en)
}

/// Dollars with two decimals, thousands separators and the sign before the `$`.
pub fn money(x: f64) -> String {
    let cents = (x.abs() * 100.0).round() as u64;
    let sign = if x < 0.0 && cents > 0 { "-" } else { "" };
    format!("{sign}${}.{:02}", count(cents / 100), cents % 100)
}

/// Tokens as ccusage counts them: uncached input, output, cache writes, cache reads, and all
/// four together.
fn tokens(t: &Totals) -> [u64; 5] {
    let b = &t.billed;
    let total = b.input + t.output_tokens + b.writes() + b.read;
    [b.input, t.output_tokens, b.writes(), b.read, total]
}

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

fn header(view: View, predicted: bool) -> Vec<&'static str> {
    let mut h = vec![view.key_title()];
    match view {
        View::Session => h.extend(["Project", "Last Activity"]),
        View::Blocks => h.push("Last Activity"),
        _ => {}
    }
    h.extend([
        "Models",
        "Input",
        "Output",
        "Cache Create",
        "Cache Read",
        "Total Tokens",
        "Cost billed",
    ]);
    if predicted {
        h.extend(["Cost predicted", "Breaks billed / predicted"]);
    } else {
        h.push("Breaks billed");
    }
    h
}

fn figure_cells(t: &Totals, predicted: bool) -> Vec<Cell> {
    let mut c: Vec<Cell> = tokens(t).iter().map(|&n| right(count(n))).collect();
    c.push(right(money(t.billed_usd())));
    if predicted {
        c.push(right(money(t.predicted_usd())));
        c.push(right(format!(
            "{} / {}",
            count(t.billed_breaks as u64),
            count(t.predicted_breaks as u64)
        )));
    } else {
        c.push(right(count(t.billed_breaks as u64)));
    }
    c
}

fn row_cells(r: &Row, view: View, sel: &Selection, predicted: bool) -> Vec<Cell> {
    let mut c = vec![Cell::new(&r.key)];
    match view {
        View::Session => {
            c.push(Cell::new(
                r.projects.iter().cloned().collect::<Vec<_>>().join("\n"),
            ));
            c.push(Cell::new(sel.minute_label(r.last_ms)));
        }
        View::Blocks => c.push(Cell::new(sel.minute_label(r.last_ms))),
        _ => {}
    }
    c.push(Cell::new(
        r.models.iter().cloned().collect::<Vec<_>>().join("\n"),
    ));
    c.extend(figure_cells(&r.totals, predicted));
    c
}

fn new_table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    t.set_header(header);
    t
}

/// The view's table with a Total row.
fn view_table(a: &Account, view: View, rows: &[Row]) -> Table {
    let sel = &a.options.selection;
    let mut t = new_table(header(view, a.predicted));
    for r in rows {
        t.add_row(row_cells(r, view, sel, a.predicted));
    }
    let mut total = vec![Cell::new("Total")];
    let blanks = match view {
        View::Session => 3,
        View::Blocks => 2,
        _ => 1,
    };
    total.extend((0..blanks).map(|_| Cell::new("")));
    total.extend(figure_cells(&views::total(&a.sessions), a.predicted));
    t.add_row(total);
    t
}

fn causes_table(all: &Totals) -> Table {
    let mut t = new_table(vec!["Predicted break cause", "Breaks"]);
    for (cause, n) in &all.causes {
        t.add_row(vec![Cell::new(cause), right(count(*n as u64))]);
    }
    t
}

fn whatif_table(a: &Account) -> Table {
    let mut t = new_table(vec![
        "What if (predicted)",
        "Hit rate",
        "Breaks",
        "Pings",
        "Cost",
        "Saving",
    ]);
    let base = a.whatif.first().map_or(0.0, |w| w.total_usd());
    for w in &a.whatif {
        let saving = base - w.total_usd();
        let share = if base > 0.0 { saving / base } else { 0.0 };
        t.add_row(vec![
            Cell::new(w.setting.label()),
            right(format!("{:.1}%", w.predicted.hit_rate() * 100.0)),
            right(count(w.breaks as u64)),
            right(count(w.pings)),
            right(money(w.total_usd())),
            right(format!("{} ({:.1}%)", money(saving), share * 100.0)),
        ]);
    }
    t
}

/// The terminal report of `view`.
pub fn render(a: &Account, view: View) -> String {
    let sel = &a.options.selection;
    let rows = views::rows(&a.sessions, view, sel);
    let mut out = format!(
        "plancache account: {} view, {} sessions ({} files, {:.1} MB), days in {}\n",
        view.name(),
        count(a.sessions.len() as u64),
        count(a.files as u64),
        a.bytes as f64 / 1e6,
        sel.tz_name
    );
    out.push_str(if a.predicted {
        "billed: the usage records; predicted: plancache's replay of the transcripts (docs/account.md)\n"
    } else {
        "billed figures only (--billed-only): no replay, no prediction, no what-if\n"
    });
    out.push_str(&format!("{}\n", view_table(a, view, &rows)));
    if a.predicted {
        let all = views::total(&a.sessions);
        if all.causes.is_empty() {
            out.push_str("No predicted break.\n");
        } else {
            out.push_str(&format!("{}\n", causes_table(&all)));
        }
        out.push_str(&format!("{}\n", whatif_table(a)));
    }
    out
}

fn totals_json(t: &Totals, predicted: bool) -> Value {
    let [input, output, create, read, total] = tokens(t);
    let mut v = json!({
        "requests": t.billed.requests,
        "inputTokens": input,
        "outputTokens": output,
        "cacheCreationTokens": create,
        "cacheReadTokens": read,
        "totalTokens": total,
        "totalCost": t.billed_usd(),
        "billedBreaks": t.billed_breaks,
    });
    if predicted {
        v["predicted"] = json!({
            "inputTokens": t.predicted.input,
            "cacheCreationTokens": t.predicted.writes(),
            "cacheReadTokens": t.predicted.read,
            "totalCost": t.predicted_usd(),
            "breaks": t.predicted_breaks,
            "breaksByCause": t.causes,
        });
    }
    v
}

fn row_json(r: &Row, view: View, sel: &Selection, predicted: bool) -> Value {
    let mut v = totals_json(&r.totals, predicted);
    let key = match view {
        View::Daily => "date",
        View::Weekly => "week",
        View::Monthly => "month",
        View::Session => "sessionId",
        View::Blocks => "startTime",
    };
    v[key] = json!(r.key);
    v["modelsUsed"] = json!(r.models);
    v["projects"] = json!(r.projects);
    v["sessions"] = json!(r.totals.sessions);
    v["lastActivity"] = json!(sel.minute_label(r.last_ms));
    if view == View::Blocks {
        v["endTime"] = json!(sel.minute_label(r.end_ms));
    }
    v
}

/// The same report as JSON: `{"<view>": [rows], "totals", "whatIf", "notCounted", ...}`.
pub fn json(a: &Account, view: View) -> Value {
    let sel = &a.options.selection;
    let rows: Vec<Value> = views::rows(&a.sessions, view, sel)
        .iter()
        .map(|r| row_json(r, view, sel, a.predicted))
        .collect();
    let whatif: Vec<Value> = a
        .whatif
        .iter()
        .map(|w| {
            json!({
                "setting": w.setting.label(),
                "cacheReadTokens": w.predicted.read,
                "cacheCreationTokens": w.predicted.writes(),
                "breaks": w.breaks,
                "pings": w.pings,
                "totalCost": w.total_usd(),
            })
        })
        .collect();
    let not_counted: Vec<Value> = a
        .failures
        .iter()
        .map(|f| json!({"session": f.session, "reason": f.message}))
        .collect();
    let mut v = json!({
        "view": view.name(),
        "timezone": sel.tz_name,
        "predicted": a.predicted,
        "totals": totals_json(&views::total(&a.sessions), a.predicted),
        "whatIf": whatif,
        "notCounted": not_counted,
    });
    let key = if view == View::Session {
        "sessions"
    } else {
        view.name()
    };
    v[key] = Value::Array(rows);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_puts_the_sign_before_the_dollar_and_groups_thousands() {
        assert_eq!(money(-1.05), "-$1.05");
        assert_eq!(money(1234.5), "$1,234.50");
        assert_eq!(money(-0.001), "$0.00");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
