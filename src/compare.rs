//! The CI gate: compare a run with a saved baseline under thresholds and strategy rules.
//!
//! A baseline is what `plancache run --out DIR` wrote: `summary.csv` (with `requests.csv` next to
//! it for break reasons) or `run.json`. Current figures come from another such file or from a
//! fresh run; they are rounded exactly as the CSV writer rounds, so a run compared with its own
//! baseline is equal, not "almost equal".

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::path::Path;

use crate::engine::RunReport;
use crate::metrics::{RequestRow, SummaryRow};
use crate::util::ScenarioError;

pub mod figures;
mod strict_json;

/// (scenario, strategy, cache).
pub type Key = (String, String, String);

/// One summary point: the figures the gate checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Cached over prompt tokens, 0 to 1.
    pub hit_rate: f64,
    /// Session cost in USD (the `cost $` of `run`).
    pub cost_usd: f64,
    /// Mean estimated time to first token in milliseconds.
    pub ttft_ms: f64,
    /// Prompt tokens prefilled again because the cache did not hold them.
    pub recomputed_tokens: f64,
}

/// A request whose reuse broke, as recorded in `requests.csv` / `run.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakRecord {
    /// The request (1-based) whose reuse broke.
    pub request: usize,
    /// Why, as the file records it.
    pub reason: String,
}

/// A baseline or a current run, keyed by scenario x strategy x cache.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// Where it came from, for messages.
    pub source: String,
    /// The figures of each scenario, strategy and cache model.
    pub points: BTreeMap<Key, Point>,
    /// Break reasons per key; None when the source had no per-request rows.
    pub breaks: Option<BTreeMap<Key, Vec<BreakRecord>>>,
    /// Where each point was read (`file:line`), for messages; empty for a fresh run.
    pub places: BTreeMap<Key, String>,
    /// Requests per point, where the file gives them (bounds the cost a replay can produce).
    pub requests: BTreeMap<Key, f64>,
}

fn round_trip(s: &str) -> f64 {
    s.parse().unwrap_or(0.0)
}

impl Dataset {
    /// From a fresh run, rounded as `summary.csv` rounds.
    pub fn from_run(run: &RunReport, source: &str) -> Self {
        let mut d = Dataset {
            source: source.to_string(),
            ..Dataset::default()
        };
        for s in run.summaries() {
            d.insert_summary(&s);
        }
        let mut breaks: BTreeMap<Key, Vec<BreakRecord>> = BTreeMap::new();
        // The gate counts replies: a ping's or a compaction's break is not a reply's.
        for r in run.rows().filter(|r| r.is_reply()) {
            add_break(&mut breaks, r);
        }
        d.breaks = Some(breaks);
        d
    }

    fn insert_summary(&mut self, s: &SummaryRow) {
        let c = s.cells();
        self.points.insert(
            (s.scenario.clone(), s.strategy.clone(), s.cache.clone()),
            Point {
                hit_rate: round_trip(&c[9]),
                cost_usd: round_trip(&c[10]),
                ttft_ms: round_trip(&c[11]),
                recomputed_tokens: s.recomputed_tokens as f64,
            },
        );
    }

    /// Refuses figures no replay can produce: a hit rate above 1, or a cost above `cap` (the
    /// most one request can cost, [`figures::request_cap`]) times the point's requests.
    pub fn check_figures(&self, cap: f64) -> Result<(), CompareError> {
        for (key, p) in &self.points {
            let place = self
                .places
                .get(key)
                .cloned()
                .unwrap_or_else(|| self.source.clone());
            figures::check_summary(
                &format!("{place} ({} / {} / {})", key.0, key.1, key.2),
                p.hit_rate,
                p.cost_usd,
                self.requests.get(key).copied(),
                cap,
            )?;
        }
        Ok(())
    }

    /// Loads `summary.csv` (plus `requests.csv` beside it), `run.json`, or a directory holding
    /// either.
    pub fn load(path: &Path) -> Result<Self, CompareError> {
        if path.is_dir() {
            for name in ["summary.csv", "run.json"] {
                let p = path.join(name);
                if p.is_file() {
                    return Dataset::load(&p);
                }
            }
            return Err(ScenarioError::new(
                path,
                None,
                "no summary.csv or run.json in this directory",
            )
            .with_hint(format!(
                "save a baseline with `plancache run ... --out {}`",
                path.display()
            ))
            .into());
        }
        let text = crate::budget::read_text(path, "baseline").map_err(|e| {
            ScenarioError::new(path, None, e).with_hint(
                "save a baseline with `plancache run ... --out DIR` and pass DIR/summary.csv",
            )
        })?;
        if path.extension().is_some_and(|e| e == "json") {
            load_json(path, &text)
        } else {
            let mut d = load_summary_csv(path, &text)?;
            let requests = path.with_file_name("requests.csv");
            if requests.is_file() {
                let t = std::fs::read_to_string(&requests).map_err(|e| {
                    ScenarioError::new(&requests, None, format!("cannot read: {e}"))
                })?;
                d.breaks = Some(load_requests_csv(&requests, &t)?);
            }
            Ok(d)
        }
    }
}

fn add_break(breaks: &mut BTreeMap<Key, Vec<BreakRecord>>, r: &RequestRow) {
    let e = breaks
        .entry((
            r.scenario.to_string(),
            r.strategy.to_string(),
            r.cache.to_string(),
        ))
        .or_default();
    if let Some(stop) = &r.break_reason {
        e.push(BreakRecord {
            request: r.request,
            reason: stop.to_string(),
        });
    }
}

/// Reads CSV records by column name, with errors naming file, line and column.
struct Table<'a> {
    path: &'a Path,
    header: Vec<String>,
    rows: Vec<(u64, csv::StringRecord)>,
}

impl<'a> Table<'a> {
    fn parse(
        path: &'a Path,
        text: &str,
        required: &[&str],
        hint: &str,
    ) -> Result<Self, CompareError> {
        let line1 = || Some("line 1".to_string());
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = r
            .headers()
            .map_err(|e| ScenarioError::new(path, line1(), format!("not CSV: {e}")))?
            .iter()
            .map(String::from)
            .collect();
        for (i, h) in header.iter().enumerate() {
            if let Some(j) = header[..i].iter().position(|x| x == h) {
                return Err(ScenarioError::new(
                    path,
                    line1(),
                    format!(
                        "column `{h}` is given twice (columns {} and {}); a gate cannot tell which value is meant",
                        j + 1,
                        i + 1
                    ),
                )
                .with_hint(hint)
                .into());
            }
        }
        for c in required {
            if !header.iter().any(|h| h == c) {
                return Err(
                    ScenarioError::new(path, line1(), format!("missing column `{c}`"))
                        .with_hint(hint)
                        .into(),
                );
            }
        }
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| ScenarioError::new(path, None, e))?;
            let line = rec.position().map_or(0, |p| p.line());
            rows.push((line, rec));
        }
        Ok(Table { path, header, rows })
    }
    fn get<'r>(&self, rec: &'r csv::StringRecord, col: &str) -> &'r str {
        let i = self.header.iter().position(|h| h == col).unwrap_or(0);
        rec.get(i).unwrap_or("")
    }
    fn num(&self, line: u64, rec: &csv::StringRecord, col: &str) -> Result<f64, CompareError> {
        let v = self.get(rec, col);
        let bad = |why: &str| {
            ScenarioError::new(
                self.path,
                Some(format!("line {line}")),
                format!("column `{col}`: `{v}` {why}"),
            )
            .with_hint(REGENERATE)
            .into()
        };
        let n = v
            .trim()
            .parse::<f64>()
            .map_err(|_| bad("is not a number"))?;
        finite(n).map_err(bad)
    }
}

/// A figure read from a baseline must be a finite number of at least 0: NaN compares false
/// with everything, so a NaN baseline would pass every check, and an infinite one would
/// allow any worsening.
fn finite(v: f64) -> Result<f64, &'static str> {
    figures::non_negative(v)
}

const SUMMARY_HINT: &str =
    "pass the summary.csv written by `plancache run --out DIR` (not requests.csv)";

/// The fix of a baseline CSV with a bad row.
const REGENERATE: &str = "regenerate the file with `plancache run --out DIR`";

/// The fix of a bad `run.json` baseline.
const JSON_HINT: &str = "pass the run.json written by `plancache run --format json --out DIR`";

/// The syntax of `--rule`, shown with every mistake in one.
const RULE_HINT: &str = "write A<=B:METRIC or A<B:METRIC[+LIMIT], e.g. `permission-mode<=toolset-swap:cost` or `permission-mode<=toolset-swap:hit-rate+0.01`; METRIC is cost, hit-rate, ttft or recomputed";

/// A baseline that cannot be read, a figure no replay can produce, or a threshold or rule that
/// is not valid.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A baseline file that is not valid: the file, the place (`line N`), what, the fix.
    #[error(transparent)]
    File(Box<ScenarioError>),
    /// Two rows of a baseline for one scenario / strategy / cache.
    #[error("{first} and {place}: two rows for {} / {} / {}; a gate cannot tell which is meant\n  hint: {hint}", .key.0, .key.1, .key.2)]
    TwoRows {
        /// The first row (`file:line`).
        first: String,
        /// The second.
        place: String,
        /// The point both name.
        key: Box<Key>,
        /// How to fix the file.
        hint: &'static str,
    },
    /// A figure no replay can produce (`file:line: hit_rate 1.2 is above 1 ...`).
    #[error(transparent)]
    Figure(#[from] figures::FigureError),
    /// A threshold that is no number.
    #[error("`{spec}` is not a threshold\n  hint: give a number in the metric's unit (0.02, 150) or a percent of the baseline (5%)")]
    NotThreshold {
        /// As given.
        spec: String,
    },
    /// A negative or infinite threshold.
    #[error("`{spec}`: a threshold must be a non-negative number")]
    NegativeThreshold {
        /// As given.
        spec: String,
    },
    /// A bare hit-rate limit above 1 (more than 100 points).
    #[error("`{spec}` as a hit-rate limit would allow a drop of {:.0} points (a rate is a fraction: 1 = 100 points)\n  hint: write `{}%` for {} points, or `{}` as a fraction", .value * 100.0, .spec.trim(), .spec.trim(), .value / 100.0)]
    RateAbove {
        /// As given.
        spec: String,
        /// Its value.
        value: f64,
    },
    /// A `--rule` that is not valid.
    #[error("--rule `{spec}`: {what}\n  hint: {hint}", hint = RULE_HINT)]
    Rule {
        /// As given.
        spec: String,
        /// The mistake.
        what: String,
    },
}

impl From<ScenarioError> for CompareError {
    fn from(e: ScenarioError) -> Self {
        CompareError::File(Box::new(e))
    }
}

fn load_summary_csv(path: &Path, text: &str) -> Result<Dataset, CompareError> {
    let t = Table::parse(
        path,
        text,
        &[
            "scenario",
            "strategy",
            "cache",
            "hit_rate",
            "cost_usd",
            "ttft_ms",
            "recomputed_tokens",
        ],
        SUMMARY_HINT,
    )?;
    if t.header.iter().any(|h| h == "request") {
        return Err(
            ScenarioError::new(path, None, "this is a requests.csv (one row per request)")
                .with_hint(SUMMARY_HINT)
                .into(),
        );
    }
    let mut d = Dataset {
        source: path.display().to_string(),
        ..Dataset::default()
    };
    for (line, rec) in &t.rows {
        let key = (
            t.get(rec, "scenario").to_string(),
            t.get(rec, "strategy").to_string(),
            t.get(rec, "cache").to_string(),
        );
        let p = Point {
            hit_rate: t.num(*line, rec, "hit_rate")?,
            cost_usd: t.num(*line, rec, "cost_usd")?,
            ttft_ms: t.num(*line, rec, "ttft_ms")?,
            recomputed_tokens: t.num(*line, rec, "recomputed_tokens")?,
        };
        let place = format!("{}:{line}", path.display());
        if let Some(first) = d.places.get(&key) {
            return Err(CompareError::TwoRows {
                first: first.clone(),
                place,
                key: Box::new(key),
                hint: REGENERATE,
            });
        }
        if t.header.iter().any(|h| h == "requests") {
            d.requests
                .insert(key.clone(), t.num(*line, rec, "requests")?);
        }
        d.places.insert(key.clone(), place);
        d.points.insert(key, p);
    }
    Ok(d)
}

fn load_requests_csv(
    path: &Path,
    text: &str,
) -> Result<BTreeMap<Key, Vec<BreakRecord>>, CompareError> {
    let t = Table::parse(
        path,
        text,
        &["scenario", "strategy", "cache", "request", "break_reason"],
        "requests.csv as written by `plancache run --out DIR`",
    )?;
    let mut out: BTreeMap<Key, Vec<BreakRecord>> = BTreeMap::new();
    // Files written before the `kind` column hold replies only.
    let has_kind = t.header.iter().any(|h| h == "kind");
    for (line, rec) in &t.rows {
        if has_kind && !matches!(t.get(rec, "kind"), "" | "reply") {
            continue;
        }
        let e = out
            .entry((
                t.get(rec, "scenario").to_string(),
                t.get(rec, "strategy").to_string(),
                t.get(rec, "cache").to_string(),
            ))
            .or_default();
        let reason = t.get(rec, "break_reason");
        if !reason.is_empty() {
            e.push(BreakRecord {
                request: t.num(*line, rec, "request")? as usize,
                reason: reason.to_string(),
            });
        }
    }
    Ok(out)
}

fn load_json(path: &Path, text: &str) -> Result<Dataset, CompareError> {
    let bad = |what: String| -> CompareError {
        ScenarioError::new(path, None, what)
            .with_hint(JSON_HINT)
            .into()
    };
    let lines = strict_json::walk(text).map_err(bad)?;
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let summary = v
        .get("summary")
        .and_then(|s| s.as_array())
        .ok_or_else(|| bad("no `summary` array".into()))?;
    let s_field = |o: &serde_json::Value, k: &str, i: usize| -> Result<String, CompareError> {
        o.get(k)
            .and_then(|x| x.as_str())
            .map(String::from)
            .ok_or_else(|| bad(format!("summary[{i}]: missing string `{k}`")))
    };
    let n_field =
        |o: &serde_json::Value, k: &str, i: usize, arr: &str| -> Result<f64, CompareError> {
            let v = o
                .get(k)
                .and_then(|x| x.as_f64())
                .ok_or_else(|| bad(format!("{arr}[{i}]: missing number `{k}`")))?;
            finite(v).map_err(|why| bad(format!("{arr}[{i}]: `{k}` = {v} {why}")))
        };
    let mut d = Dataset {
        source: path.display().to_string(),
        ..Dataset::default()
    };
    for (i, o) in summary.iter().enumerate() {
        // Round as summary.csv does, so JSON and CSV baselines gate identically.
        let hit = n_field(o, "hit_rate", i, "summary")?;
        let cost = n_field(o, "cost_usd", i, "summary")?;
        let ttft = n_field(o, "ttft_ms", i, "summary")?;
        let key = (
            s_field(o, "scenario", i)?,
            s_field(o, "strategy", i)?,
            s_field(o, "cache", i)?,
        );
        let place = match lines.get(&format!("summary[{i}]")) {
            Some(l) => format!("{}:{l}", path.display()),
            None => format!("{}: summary[{i}]", path.display()),
        };
        if let Some(first) = d.places.get(&key) {
            return Err(CompareError::TwoRows {
                first: first.clone(),
                place,
                key: Box::new(key),
                hint: JSON_HINT,
            });
        }
        if o.get("requests").is_some() {
            d.requests
                .insert(key.clone(), n_field(o, "requests", i, "summary")?);
        }
        d.places.insert(key.clone(), place);
        d.points.insert(
            key,
            Point {
                hit_rate: round_trip(&format!("{hit:.4}")),
                cost_usd: round_trip(&format!("{cost:.6}")),
                ttft_ms: round_trip(&format!("{ttft:.1}")),
                recomputed_tokens: n_field(o, "recomputed_tokens", i, "summary")?,
            },
        );
    }
    if let Some(reqs) = v.get("requests").and_then(|r| r.as_array()) {
        let mut out: BTreeMap<Key, Vec<BreakRecord>> = BTreeMap::new();
        for (i, o) in reqs.iter().enumerate() {
            let key = (
                s_field(o, "scenario", i)?,
                s_field(o, "strategy", i)?,
                s_field(o, "cache", i)?,
            );
            let e = out.entry(key).or_default();
            if !matches!(o.get("kind").and_then(|k| k.as_str()), None | Some("reply")) {
                continue;
            }
            let reason = o.get("break_reason").and_then(|x| x.as_str()).unwrap_or("");
            if !reason.is_empty() {
                e.push(BreakRecord {
                    request: n_field(o, "request", i, "requests")? as usize,
                    reason: reason.to_string(),
                });
            }
        }
        d.breaks = Some(out);
    }
    Ok(d)
}

/// A threshold: in the metric's own unit, or relative to the baseline value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// In the metric's unit (`0.01` of hit rate, `0.05` dollars).
    Absolute(f64),
    /// In percent of the baseline value.
    Percent(f64),
}

impl Limit {
    /// `0.02`, `5%`.
    pub fn parse(s: &str) -> Result<Limit, CompareError> {
        let t = s.trim();
        let (num, pct) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let v: f64 = num.parse().map_err(|_| CompareError::NotThreshold {
            spec: s.to_string(),
        })?;
        if !v.is_finite() || v < 0.0 {
            return Err(CompareError::NegativeThreshold {
                spec: s.to_string(),
            });
        }
        Ok(if pct {
            Limit::Percent(v)
        } else {
            Limit::Absolute(v)
        })
    }
    /// A limit on a rate (hit rate): `5%` and `0.05` both mean 5 percentage points. A bare
    /// number above 1 would allow a drop of more than 100 points, so it is refused with the
    /// percent spelling the user probably meant.
    pub fn parse_rate(s: &str) -> Result<Limit, CompareError> {
        match Limit::parse(s)? {
            Limit::Percent(p) => Ok(Limit::Absolute(p / 100.0)),
            Limit::Absolute(v) if v > 1.0 => Err(CompareError::RateAbove {
                spec: s.to_string(),
                value: v,
            }),
            limit => Ok(limit),
        }
    }

    /// The allowed worsening for a baseline value.
    pub fn allowed(self, baseline: f64) -> f64 {
        match self {
            Limit::Absolute(v) => v,
            Limit::Percent(p) => baseline.abs() * p / 100.0,
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Absolute(v) => write!(f, "{v}"),
            Limit::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// A figure the gate can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// [`Point::hit_rate`] (higher is better).
    HitRate,
    /// [`Point::cost_usd`].
    Cost,
    /// [`Point::ttft_ms`].
    Ttft,
    /// [`Point::recomputed_tokens`].
    Recomputed,
}

impl Metric {
    /// The metric a `--rule` or threshold names (`hit-rate` or `hit_rate`, `cost`, ...).
    pub fn parse(s: &str) -> Option<Metric> {
        match s.trim() {
            "hit-rate" | "hit_rate" => Some(Metric::HitRate),
            "cost" | "cost_usd" => Some(Metric::Cost),
            "ttft" | "ttft_ms" => Some(Metric::Ttft),
            "recomputed" | "recomputed_tokens" => Some(Metric::Recomputed),
            _ => None,
        }
    }

    /// The metric's column name in reports (`hit rate`, `cost $`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::HitRate => "hit rate",
            Metric::Cost => "cost $",
            Metric::Ttft => "TTFT ms",
            Metric::Recomputed => "recomputed tokens",
        }
    }

    /// The metric's value at `p`.
    pub fn value(self, p: &Point) -> f64 {
        match self {
            Metric::HitRate => p.hit_rate,
            Metric::Cost => p.cost_usd,
            Metric::Ttft => p.ttft_ms,
            Metric::Recomputed => p.recomputed_tokens,
        }
    }
    /// How much worse `current` is than `reference` (positive = worse).
    pub fn worsening(self, reference: f64, current: f64) -> f64 {
        match self {
            Metric::HitRate => reference - current,
            _ => current - reference,
        }
    }
    fn show(self, v: f64) -> String {
        match self {
            Metric::HitRate => format!("{:.2}%", v * 100.0),
            Metric::Cost => format!("{v:.6}"),
            Metric::Ttft => format!("{v:.1}"),
            Metric::Recomputed => format!("{v:.0}"),
        }
    }
    fn show_delta(self, d: f64) -> String {
        match self {
            Metric::HitRate => format!("{:+.2} pp", d * 100.0),
            Metric::Cost => format!("{d:+.6}"),
            Metric::Ttft => format!("{d:+.1}"),
            Metric::Recomputed => format!("{d:+.0}"),
        }
    }
}

/// "strategy A must not be worse than strategy B on a metric", per scenario and cache model.
///
/// Syntax: `A<=B:METRIC` (A no worse than B), `A<B:METRIC` (A strictly better), optionally with a
/// tolerance `A<=B:METRIC+LIMIT` (A may be worse by at most LIMIT). METRIC is `cost`,
/// `hit-rate`, `ttft` or `recomputed`; "worse" means higher, except for hit rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The rule as written.
    pub text: String,
    /// The strategy that must not be worse.
    pub a: String,
    /// The strategy it is measured against.
    pub b: String,
    /// `<`: A must be strictly better.
    pub strict: bool,
    /// The compared figure.
    pub metric: Metric,
    /// How much worse A may be (`+LIMIT`).
    pub tolerance: Option<Limit>,
}

impl Rule {
    /// Parses `A<=B:METRIC[+LIMIT]` or `A<B:METRIC`; the error names the mistake and the syntax.
    pub fn parse(s: &str) -> Result<Rule, CompareError> {
        let bad = |what: &str| CompareError::Rule {
            spec: s.to_string(),
            what: what.to_string(),
        };
        let (pair, rest) = s.split_once(':').ok_or_else(|| bad("missing `:METRIC`"))?;
        let (a, b, strict) = if let Some((a, b)) = pair.split_once("<=") {
            (a, b, false)
        } else if let Some((a, b)) = pair.split_once('<') {
            (a, b, true)
        } else {
            return Err(bad("missing `<=` or `<` between two strategies"));
        };
        let (metric_text, tol) = match rest.split_once('+') {
            Some((m, t)) => (m, Some(t)),
            None => (rest, None),
        };
        let metric = Metric::parse(metric_text).ok_or_else(|| {
            bad(&format!(
                "unknown metric `{metric_text}`{}",
                crate::cache::pricing::did_you_mean(
                    metric_text.trim(),
                    ["cost", "hit-rate", "ttft", "recomputed"]
                )
            ))
        })?;
        let tol = match tol {
            Some(t) if metric == Metric::HitRate => {
                Some(Limit::parse_rate(t).map_err(|e| bad(&e.to_string()))?)
            }
            Some(t) => Some(Limit::parse(t).map_err(|e| bad(&e.to_string()))?),
            None => None,
        };
        let (a, b) = (a.trim(), b.trim());
        if a.is_empty() || b.is_empty() || a == b {
            return Err(bad("name two different strategies"));
        }
        let names = crate::strategy::names();
        for n in [a, b] {
            if !names.contains(&n) {
                return Err(bad(&format!(
                    "unknown strategy `{n}`; known strategies: {}{}",
                    names.join(", "),
                    crate::cache::pricing::did_you_mean(n, names.iter().copied())
                )));
            }
        }
        Ok(Rule {
            text: s.to_string(),
            a: a.to_string(),
            b: b.to_string(),
            strict,
            metric,
            tolerance: tol,
        })
    }
}

/// Thresholds on worsening against the baseline (None = not checked).
#[derive(Debug, Clone, Default)]
pub struct Thresholds {
    /// The largest allowed drop of the hit rate.
    pub hit_rate_drop: Option<Limit>,
    /// The largest allowed rise of the cost.
    pub cost_increase: Option<Limit>,
    /// The largest allowed rise of the mean TTFT.
    pub ttft_increase: Option<Limit>,
    /// The limits as the user wrote them (`1%` stays `1%`), by metric, echoed in the summaries;
    /// a metric without one is shown from its parsed value.
    pub given: BTreeMap<&'static str, String>,
}

impl Thresholds {
    /// How the limit on `metric` is shown: as given, else its parsed value.
    pub fn show(&self, metric: Metric, limit: Option<Limit>) -> String {
        match (self.given.get(metric.name()), limit) {
            (_, None) => "not checked".to_string(),
            (Some(text), Some(_)) => text.clone(),
            (None, Some(l)) => l.to_string(),
        }
    }
}

/// One checked figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The scenario, strategy and cache model checked.
    pub key: Key,
    /// The checked figure.
    pub metric: Metric,
    /// Its value in the baseline.
    pub baseline: f64,
    /// Its value in the current run.
    pub current: f64,
    /// The allowed worsening.
    pub limit: Limit,
    /// Whether it worsened past the limit.
    pub failed: bool,
}

/// One rule applied to one scenario x cache.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleCheck {
    /// The rule as written.
    pub rule: String,
    /// The scenario it was applied to.
    pub scenario: String,
    /// The cache model it was applied under.
    pub cache: String,
    /// Strategy A's value.
    pub a: f64,
    /// Strategy B's value.
    pub b: f64,
    /// The compared figure.
    pub metric: Metric,
    /// Whether A was worse than the rule allows.
    pub failed: bool,
}

/// The gate's verdict.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Every threshold check against the baseline.
    pub checks: Vec<Check>,
    /// Every rule applied to a scenario and cache model.
    pub rules: Vec<RuleCheck>,
    /// Baseline points absent from the current run (a failure: the gate cannot vouch for them).
    pub missing: Vec<Key>,
    /// Current points the baseline does not have (informational).
    pub added: Vec<Key>,
    /// Rules that matched no scenario x cache holding both strategies.
    pub unmatched_rules: Vec<String>,
    /// Baseline points absent from the current run that `--allow-missing` lets pass (listed,
    /// not counted as violations).
    pub missing_allowed: Vec<Key>,
}

impl Outcome {
    /// Moves the missing points to `missing_allowed` (`--allow-missing`: gating a subset of
    /// the baseline's scenarios).
    pub fn allow_missing(&mut self) {
        self.missing_allowed.append(&mut self.missing);
    }

    /// How many violations: failed checks and rules, missing points and unmatched rules.
    pub fn failures(&self) -> usize {
        self.checks.iter().filter(|c| c.failed).count()
            + self.rules.iter().filter(|r| r.failed).count()
            + self.missing.len()
            + self.unmatched_rules.len()
    }

    /// Whether the gate passes (no violation).
    pub fn passed(&self) -> bool {
        self.failures() == 0
    }
}

/// Rounding slack: CSV values carry 4-6 decimals, so smaller differences are not changes.
const EPS: f64 = 1e-9;

/// Compares `current` with `baseline`.
pub fn compare(baseline: &Dataset, current: &Dataset, t: &Thresholds, rules: &[Rule]) -> Outcome {
    let mut out = Outcome::default();
    for (key, b) in &baseline.points {
        let Some(c) = current.points.get(key) else {
            out.missing.push(key.clone());
            continue;
        };
        for (metric, limit) in [
            (Metric::HitRate, t.hit_rate_drop),
            (Metric::Cost, t.cost_increase),
            (Metric::Ttft, t.ttft_increase),
        ] {
            let Some(limit) = limit else { continue };
            let (bv, cv) = (metric.value(b), metric.value(c));
            let worse = metric.worsening(bv, cv);
            out.checks.push(Check {
                key: key.clone(),
                metric,
                baseline: bv,
                current: cv,
                limit,
                failed: worse > limit.allowed(bv) + EPS,
            });
        }
    }
    out.added = current
        .points
        .keys()
        .filter(|k| !baseline.points.contains_key(*k))
        .cloned()
        .collect();
    for rule in rules {
        let mut matched = false;
        for ((scenario, strategy, cache), a) in &current.points {
            if *strategy != rule.a {
                continue;
            }
            let Some(b) = current
                .points
                .get(&(scenario.clone(), rule.b.clone(), cache.clone()))
            else {
                continue;
            };
            matched = true;
            let (av, bv) = (rule.metric.value(a), rule.metric.value(b));
            let worse = rule.metric.worsening(bv, av);
            let allowed = rule.tolerance.map_or(0.0, |l| l.allowed(bv));
            let failed = if rule.strict {
                worse >= -EPS + allowed
            } else {
                worse > allowed + EPS
            };
            out.rules.push(RuleCheck {
                rule: rule.text.clone(),
                scenario: scenario.clone(),
                cache: cache.clone(),
                a: av,
                b: bv,
                metric: rule.metric,
                failed,
            });
        }
        if !matched {
            out.unmatched_rules.push(rule.text.clone());
        }
    }
    out
}

fn pct_change(b: f64, c: f64) -> String {
    if b.abs() < EPS {
        String::new()
    } else {
        format!(" ({:+.1}%)", (c - b) / b.abs() * 100.0)
    }
}

/// The cells every table row of a check starts with: where, what, before, after, change.
fn check_cells(c: &Check) -> String {
    format!(
        "| {} | {} | {} | {} | {} | {} | {}{} |",
        md_cell(&c.key.0),
        md_cell(&c.key.1),
        md_cell(&c.key.2),
        c.metric.name(),
        c.metric.show(c.baseline),
        c.metric.show(c.current),
        c.metric.show_delta(c.current - c.baseline),
        pct_change(c.baseline, c.current)
    )
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Break reasons of the current run for `key`, marking those the baseline did not have.
fn break_note(key: &Key, baseline: &Dataset, current: &Dataset) -> String {
    let Some(cur) = current.breaks.as_ref().and_then(|b| b.get(key)) else {
        return "(no per-request rows)".to_string();
    };
    if cur.is_empty() {
        return "none".to_string();
    }
    let base = baseline.breaks.as_ref().and_then(|b| b.get(key));
    cur.iter()
        .map(|r| {
            let new = base.is_some_and(|v| !v.contains(r));
            format!(
                "{}request {}: {}",
                if new { "**new** " } else { "" },
                r.request,
                r.reason
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// The Markdown summary for `$GITHUB_STEP_SUMMARY` or a PR comment.
pub fn markdown(
    outcome: &Outcome,
    baseline: &Dataset,
    current: &Dataset,
    t: &Thresholds,
) -> String {
    let mut s = String::new();
    let n = outcome.failures();
    if n == 0 {
        let _ = writeln!(s, "## plancache compare: passed\n");
    } else {
        let _ = writeln!(
            s,
            "## plancache compare: FAILED ({n} violation{})\n",
            if n == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(
        s,
        "Baseline `{}` ({} points), current `{}` ({} points). Limits: hit-rate drop {}, cost increase {}, TTFT increase {}.\n",
        baseline.source,
        baseline.points.len(),
        current.source,
        current.points.len(),
        t.show(Metric::HitRate, t.hit_rate_drop),
        t.show(Metric::Cost, t.cost_increase),
        t.show(Metric::Ttft, t.ttft_increase)
    );
    let failed: Vec<&Check> = outcome.checks.iter().filter(|c| c.failed).collect();
    if !failed.is_empty() {
        s.push_str("### Regressions\n\n| scenario | strategy | cache | metric | baseline | current | change | limit | cache breaks (current run) |\n|---|---|---|---|---|---|---|---|---|\n");
        for c in failed {
            let _ = writeln!(
                s,
                "{} {} | {} |",
                check_cells(c),
                t.show(c.metric, Some(c.limit)),
                md_cell(&break_note(&c.key, baseline, current))
            );
        }
        s.push('\n');
    }
    if !outcome.missing.is_empty() {
        s.push_str("### Missing from the current run\n\n");
        for k in &outcome.missing {
            let _ = writeln!(s, "- {} / {} / {}", k.0, k.1, k.2);
        }
        s.push('\n');
    }
    if !outcome.missing_allowed.is_empty() {
        s.push_str("### Not in the current run (allowed by --allow-missing)\n\n");
        for k in &outcome.missing_allowed {
            let _ = writeln!(s, "- {} / {} / {}", k.0, k.1, k.2);
        }
        s.push('\n');
    }
    if !outcome.rules.is_empty() || !outcome.unmatched_rules.is_empty() {
        s.push_str(
            "### Rules\n\n| | rule | scenario | cache | A | B |\n|---|---|---|---|---|---|\n",
        );
        for r in &outcome.rules {
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {} | {} |",
                if r.failed { "FAIL" } else { "ok" },
                md_cell(&r.rule),
                md_cell(&r.scenario),
                md_cell(&r.cache),
                r.metric.show(r.a),
                r.metric.show(r.b)
            );
        }
        for r in &outcome.unmatched_rules {
            let _ = writeln!(
                s,
                "| FAIL | `{}` | - | - | no scenario x cache has both strategies | |",
                md_cell(r)
            );
        }
        s.push('\n');
    }
    if !outcome.added.is_empty() {
        s.push_str("### New in the current run (not gated)\n\n");
        for k in &outcome.added {
            let _ = writeln!(s, "- {} / {} / {}", k.0, k.1, k.2);
        }
        s.push('\n');
    }
    // Every compared point, folded, so a passing run still shows its numbers.
    s.push_str("<details><summary>All compared points</summary>\n\n| scenario | strategy | cache | metric | baseline | current | change |\n|---|---|---|---|---|---|---|\n");
    for c in &outcome.checks {
        let _ = writeln!(s, "{}", check_cells(c));
    }
    s.push_str("\n</details>\n");
    s
}

/// One line per violation, then the verdict (`--quiet`).
pub fn quiet(outcome: &Outcome, baseline: &Dataset, t: &Thresholds) -> String {
    let mut s = String::new();
    for c in outcome.checks.iter().filter(|c| c.failed) {
        let _ = writeln!(
            s,
            "FAIL {} / {} / {}: {} {} -> {} ({}{}), limit {}",
            c.key.0,
            c.key.1,
            c.key.2,
            c.metric.name(),
            c.metric.show(c.baseline),
            c.metric.show(c.current),
            c.metric.show_delta(c.current - c.baseline),
            pct_change(c.baseline, c.current),
            t.show(c.metric, Some(c.limit))
        );
    }
    for r in outcome.rules.iter().filter(|r| r.failed) {
        let _ = writeln!(
            s,
            "FAIL {} / {}: rule `{}`: {} vs {}",
            r.scenario,
            r.cache,
            r.rule,
            r.metric.show(r.a),
            r.metric.show(r.b)
        );
    }
    for r in &outcome.unmatched_rules {
        let _ = writeln!(
            s,
            "FAIL rule `{r}`: no scenario x cache has both strategies"
        );
    }
    for k in &outcome.missing {
        let _ = writeln!(
            s,
            "FAIL {} / {} / {}: missing from the current run",
            k.0, k.1, k.2
        );
    }
    let n = outcome.failures();
    let checked = outcome.checks.len() + outcome.rules.len();
    let allowed = if outcome.missing_allowed.is_empty() {
        String::new()
    } else {
        format!(
            ", {} baseline point(s) not run (allowed)",
            outcome.missing_allowed.len()
        )
    };
    let _ = writeln!(
        s,
        "plancache compare: {} ({checked} check(s), {n} violation(s){allowed}) against {}",
        if n == 0 { "passed" } else { "FAILED" },
        baseline.source
    );
    s
}

/// The outcome as JSON (`--json`): the verdict, the limits as given, every check and rule, and
/// the missing and added points.
pub fn json(outcome: &Outcome, baseline: &Dataset, current: &Dataset, t: &Thresholds) -> String {
    use serde_json::json;
    let key = |k: &Key| json!({"scenario": k.0, "strategy": k.1, "cache": k.2});
    let checks: Vec<serde_json::Value> = outcome
        .checks
        .iter()
        .map(|c| {
            json!({
                "scenario": c.key.0, "strategy": c.key.1, "cache": c.key.2,
                "metric": c.metric.name(), "baseline": c.baseline, "current": c.current,
                "limit": t.show(c.metric, Some(c.limit)), "failed": c.failed,
            })
        })
        .collect();
    let rules: Vec<serde_json::Value> = outcome
        .rules
        .iter()
        .map(|r| {
            json!({
                "rule": r.rule, "scenario": r.scenario, "cache": r.cache,
                "metric": r.metric.name(), "a": r.a, "b": r.b, "failed": r.failed,
            })
        })
        .collect();
    let v = json!({
        "passed": outcome.passed(),
        "violations": outcome.failures(),
        "baseline": {"source": baseline.source, "points": baseline.points.len()},
        "current": {"source": current.source, "points": current.points.len()},
        "limits": {
            "hit_rate_drop": t.show(Metric::HitRate, t.hit_rate_drop),
            "cost_increase": t.show(Metric::Cost, t.cost_increase),
            "ttft_increase": t.show(Metric::Ttft, t.ttft_increase),
        },
        "checks": checks,
        "rules": rules,
        "unmatched_rules": outcome.unmatched_rules,
        "missing": outcome.missing.iter().map(key).collect::<Vec<_>>(),
        "missing_allowed": outcome.missing_allowed.iter().map(key).collect::<Vec<_>>(),
        "added": outcome.added.iter().map(key).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// The distinct cache models of a dataset, in key order.
pub fn caches(d: &Dataset) -> Vec<String> {
    let mut v: Vec<String> = d.points.keys().map(|k| k.2.clone()).collect();
    v.dedup();
    v.sort();
    v.dedup();
    v
}
