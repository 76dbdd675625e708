//! `cache_cost`: the strategies compared by deterministic quantities instead of time: recomputed
//! tokens and session cost in micro-dollars, on the bundled scenarios and a long generated
//! session, under the default cache model.
//!
//! The figures are exact (a replay is deterministic), so this is not a criterion benchmark:
//! statistics, outliers and p-values would only describe noise that does not exist. It prints
//! each strategy's figures; with a saved baseline it prints the exact change.
//!
//! ```text
//! cargo bench --bench cache_cost -- --save-baseline main    # on main
//! cargo bench --bench cache_cost -- --baseline main         # on a branch: exact deltas
//! ```
//!
//! Criterion's flags (`--quick`, `--noplot`, a filter) are accepted and ignored, so
//! `cargo bench -- --quick --noplot` runs every bench. Baselines live in
//! `target/cache_cost/NAME.csv`.

#[allow(dead_code)]
#[path = "common/sessions.rs"]
mod sessions;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use plancache::cache::DEFAULT_CACHE;
use plancache::engine::{self, ReplayEnv};
use plancache::strategy;

/// Per strategy: (recomputed tokens, micro-dollars).
type Figures = BTreeMap<String, (u64, i64)>;

fn measure() -> (Vec<String>, Figures) {
    let env = ReplayEnv::default();
    let mut sessions = sessions::bundled();
    sessions.push(sessions::long_session(200, 17));
    let caches = vec![DEFAULT_CACHE.to_string()];
    let mut order = Vec::new();
    let mut out = Figures::new();
    for s in strategy::all() {
        let name = s.name().to_string();
        let run = engine::run(&sessions, &[s], &caches, &env).expect("bundled sessions replay");
        let summaries = run.summaries();
        let tokens = summaries.iter().map(|r| r.recomputed_tokens).sum();
        let micro = (summaries.iter().map(|r| r.cost_usd).sum::<f64>() * 1e6).round() as i64;
        order.push(name.clone());
        out.insert(name, (tokens, micro));
    }
    (order, out)
}

fn baseline_path(name: &str) -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    target.join("cache_cost").join(format!("{name}.csv"))
}

fn load(name: &str) -> Result<Figures, String> {
    let path = baseline_path(name);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: cannot read baseline `{name}`: {e}\n  hint: save it first with `cargo bench --bench cache_cost -- --save-baseline {name}`",
            path.display()
        )
    })?;
    let mut out = Figures::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let bad = || {
            format!(
                "{}: line {}: expected strategy,tokens,micro_usd",
                path.display(),
                i + 1
            )
        };
        let [s, t, m] = cells.as_slice() else {
            return Err(bad());
        };
        out.insert(
            s.to_string(),
            (t.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?),
        );
    }
    Ok(out)
}

fn save(name: &str, figures: &Figures) -> Result<PathBuf, String> {
    let path = baseline_path(name);
    let mut text = String::from("strategy,recomputed_tokens,micro_usd\n");
    for (s, (t, m)) in figures {
        let _ = writeln!(text, "{s},{t},{m}");
    }
    plancache::export::write_atomic(&path, text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(path)
}

/// `+1200 (+0.52%)`, or `unchanged`.
fn delta(now: i128, then: i128) -> String {
    if now == then {
        return "unchanged".to_string();
    }
    let pct = if then == 0 {
        String::new()
    } else {
        format!(" ({:+.2}%)", (now - then) as f64 / then as f64 * 100.0)
    };
    format!("{:+}{pct}", now - then)
}

/// The report: one line per strategy, with deltas against `baseline` when given.
pub fn render(order: &[String], now: &Figures, baseline: Option<(&str, &Figures)>) -> String {
    let mut out = format!(
        "cache_cost: exact figures, {} cache model, bundled scenarios + a generated 200-request session\n",
        DEFAULT_CACHE
    );
    let _ = writeln!(
        out,
        "{:<16} {:>18} {:>14}{}",
        "strategy",
        "recomputed tokens",
        "cost µ$",
        baseline.map_or(String::new(), |(n, _)| format!(
            "   change vs baseline `{n}`"
        ))
    );
    for s in order {
        let (t, m) = now[s];
        let change = match baseline {
            None => String::new(),
            Some((_, b)) => match b.get(s) {
                None => "   new strategy (not in the baseline)".to_string(),
                Some(&(bt, bm)) => format!(
                    "   tokens {}, cost {}",
                    delta(t as i128, bt as i128),
                    delta(m as i128, bm as i128)
                ),
            },
        };
        let _ = writeln!(out, "{s:<16} {t:>18} {m:>14}{change}");
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (order, now) = measure();
    // `cargo test --benches` runs this without `--bench`: check the baseline round trip and the
    // delta wording instead of only printing.
    if !args.iter().any(|a| a == "--bench") {
        self_check(&order, &now);
    }
    let result = (|| -> Result<String, String> {
        let baseline = match value_of("--baseline") {
            Some(name) => Some((name.clone(), load(&name)?)),
            None => None,
        };
        let mut text = render(
            &order,
            &now,
            baseline.as_ref().map(|(n, f)| (n.as_str(), f)),
        );
        if let Some(name) = value_of("--save-baseline") {
            let path = save(&name, &now)?;
            let _ = writeln!(text, "saved baseline `{name}` to {}", path.display());
        }
        Ok(text)
    })();
    match result {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}

/// Checks that a saved baseline reads back equal (every line `unchanged`) and that a change is
/// shown as its exact difference.
fn self_check(order: &[String], now: &Figures) {
    let name = format!("self-check-{}", std::process::id());
    let path = save(&name, now).expect("save the baseline");
    let back = load(&name).expect("read the baseline back");
    let _ = std::fs::remove_file(path);
    assert_eq!(&back, now);
    let text = render(order, now, Some((&name, &back)));
    assert_eq!(
        text.matches("tokens unchanged, cost unchanged").count(),
        order.len(),
        "{text}"
    );
    // 601690 -> 601730 tokens is +40 (+0.01%: 40 / 601690 = 0.0066%).
    assert_eq!(delta(601_730, 601_690), "+40 (+0.01%)");
    assert_eq!(delta(5, 10), "-5 (-50.00%)");
    // README shows what `cargo bench --bench cache_cost -- --quick --noplot` prints.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let start = readme
        .find("cache_cost: exact figures")
        .expect("README shows the output");
    let shown = &readme[start
        ..readme[start..]
            .find("```")
            .map_or(readme.len(), |e| start + e)];
    assert_eq!(
        shown,
        render(order, now, None),
        "README's cache_cost output is stale"
    );
}
