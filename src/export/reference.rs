//! Figures relative to a reference strategy, as hyperfine's `--reference`: each summary's cost
//! as a multiple of the reference's and its hit rate in points above or below, and one verdict
//! per scenario (and cache model) naming the cheapest strategy against the reference.

use crate::metrics::SummaryRow;

/// Headers of the relative columns, appended after the table's own.
pub const HEADERS: [&str; 2] = ["× cost", "Δ hit rate"];

/// The reference's summary for the same scenario and cache model as `row`.
fn reference_of<'a>(
    rows: &'a [SummaryRow],
    row: &SummaryRow,
    reference: &str,
) -> Option<&'a SummaryRow> {
    rows.iter()
        .find(|r| r.scenario == row.scenario && r.cache == row.cache && r.strategy == reference)
}

/// `0.62×`, or `n/a` when the reference costs nothing.
fn ratio(cost: f64, reference: f64) -> String {
    if reference > 0.0 {
        format!("{:.2}×", cost / reference)
    } else {
        "n/a".to_string()
    }
}

/// The two relative cells of every row (`1.00×` and `ref` on the reference's own rows).
pub fn cells(rows: &[SummaryRow], reference: &str) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| match reference_of(rows, r, reference) {
            Some(base) if base.strategy == r.strategy => {
                vec![ratio(r.cost_usd, base.cost_usd), "ref".into()]
            }
            Some(base) => vec![
                ratio(r.cost_usd, base.cost_usd),
                format!("{:+.1} pt", (r.hit_rate - base.hit_rate) * 100.0),
            ],
            None => vec![String::new(), String::new()],
        })
        .collect()
}

/// What a row saves against its reference, in dollars (`0.0039`; negative when it costs more;
/// `ref` on the reference's own rows, empty without a reference). Printed beside the relative
/// columns when the reference is the log as sent (`plancache run LOG`).
pub fn savings(rows: &[SummaryRow], reference: &str) -> Vec<String> {
    rows.iter()
        .map(|r| match reference_of(rows, r, reference) {
            Some(base) if base.strategy == r.strategy => "ref".into(),
            Some(base) => {
                let s = format!("{:.4}", base.cost_usd - r.cost_usd);
                if s == "-0.0000" {
                    "0.0000".into()
                } else {
                    s
                }
            }
            None => String::new(),
        })
        .collect()
}

/// One line per scenario and cache model: the cheapest strategy and its cost against the
/// reference's (`exercise-3: history-reset: 0.61× the cost of toolset-swap`); when the
/// reference is the cheapest, the next cheapest against it.
pub fn verdicts(rows: &[SummaryRow], reference: &str) -> Vec<String> {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !groups.contains(&(r.scenario.as_str(), r.cache.as_str())) {
            groups.push((&r.scenario, &r.cache));
        }
    }
    let caches = {
        let mut c: Vec<&str> = rows.iter().map(|r| r.cache.as_str()).collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    };
    let mut out = Vec::new();
    for (scenario, cache) in groups {
        let group: Vec<&SummaryRow> = rows
            .iter()
            .filter(|r| r.scenario == scenario && r.cache == cache)
            .collect();
        let Some(base) = group.iter().find(|r| r.strategy == reference) else {
            continue;
        };
        let others: Vec<&&SummaryRow> = group.iter().filter(|r| r.strategy != reference).collect();
        // The first cheapest in the table's order; ties are equal to the cent's ten-thousandth.
        let Some(best) = others
            .iter()
            .min_by(|a, b| a.cost_usd.total_cmp(&b.cost_usd))
        else {
            continue;
        };
        let same = |a: f64, b: f64| format!("{a:.6}") == format!("{b:.6}");
        let tied: Vec<&str> = others
            .iter()
            .filter(|r| r.strategy != best.strategy && same(r.cost_usd, best.cost_usd))
            .map(|r| r.strategy.as_str())
            .collect();
        let tie = if tied.is_empty() {
            String::new()
        } else {
            format!(" (tied with {})", tied.join(", "))
        };
        let label = if caches > 1 {
            format!("{scenario} ({cache})")
        } else {
            scenario.to_string()
        };
        let line = if same(best.cost_usd, base.cost_usd) {
            format!(
                "{label}: {}{tie} costs the same as {reference}",
                best.strategy
            )
        } else if best.cost_usd < base.cost_usd {
            format!(
                "{label}: {}{tie}: {} the cost of {reference}",
                best.strategy,
                ratio(best.cost_usd, base.cost_usd)
            )
        } else {
            format!(
                "{label}: {reference} is the cheapest; next {}{tie} at {} its cost",
                best.strategy,
                ratio(best.cost_usd, base.cost_usd)
            )
        };
        out.push(line);
    }
    out
}
