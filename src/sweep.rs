//! Parameter sweeps: a TOML grid over scenario-generator parameters and replay options, run in
//! parallel, one CSV row per point, sliceable into deterministic shards that `merge` joins back.
//!
//! ```toml
//! name = "history-reset-vs-permission-mode"
//! [compare]              # optional: the break-even heatmap
//! a = "history-reset"
//! b = "permission-mode"
//! metric = "cost"        # cost | hit-rate | recomputed | ttft
//! x = "exploration_rounds"
//! y = "implementation_turns"
//! [base]                 # generator parameters shared by every point
//! seed = 7
//! [grid]                 # one list per axis; the grid is their cartesian product
//! exploration_rounds = [1, 4, 8]
//! implementation_turns = [1, 4, 8]
//! strategy = ["history-reset", "permission-mode"]
//! cache = ["anthropic"]
//! ```
//!
//! `strategy`, `cache`, `ttl` (`"5m"` or `"1h"`: the TTL class of every breakpoint of the
//! `anthropic*` cache models) and `keepalive` (`"off"` or an interval such as `"4m30s"`: the
//! keep-alive pings of every main-stream wait) are replay options; every other axis (and every `[base]` key) is a
//! generator parameter (`scenario::GeneratorParams`: `exploration_rounds`, `tool_tokens`,
//! `review_wait`, `model` for the model and hence its prices, ...). A grid without `strategy` sweeps `compare.a` and `compare.b`; a grid
//! without `cache` uses the default cache model.
//!
//! The generator axis `clear_context = [false, true]` (the plan approved with "clear context
//! and implement") with an `implementation_turns` axis answers when clearing pays for itself:
//! [`clear_context_break_even`] finds, per combination of the other axes, the fewest requests
//! after approval from which clearing costs no more than keeping the history.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::Deserialize;

use crate::cache;
use crate::engine::{self, ReplayEnv};
use crate::metrics::SUMMARY_COLUMNS;
use crate::prompt::{Encoding, Tokenizer, Ttl};
use crate::scenario::{generate, parse_keepalive, to_toml, GeneratorParams, Session};
use crate::strategy::{self, Strategy};

pub mod error;
pub mod files;

pub use error::SweepError;

/// Axes the replay consumes; every other axis goes to the scenario generator.
pub const OPTION_AXES: &[&str] = &["strategy", "cache", "ttl", "keepalive"];

/// Builds the session a point replays from its generator parameters.
pub trait ScenarioSource: Sync {
    /// The session of the point whose generator parameters are `params`.
    fn session(&self, params: &toml::Table) -> Result<Session, SweepError>;

    /// Whether the source also takes this replay-option axis among its parameters (scenario
    /// files apply `keepalive` to their TOML before loading, so load-time checks see it).
    fn takes(&self, _axis: &str) -> bool {
        false
    }
}

/// A closure as the source; its error (a message, or any error type) is the point's.
impl<F, E> ScenarioSource for F
where
    F: Fn(&toml::Table) -> Result<Session, E> + Sync,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn session(&self, params: &toml::Table) -> Result<Session, SweepError> {
        self(params).map_err(|e| SweepError::Source(e.into()))
    }
}

/// The heatmap's question: where does strategy `a` beat strategy `b` on `metric`?
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakEven {
    /// The strategy whose advantage the heatmap shows.
    pub a: String,
    /// The strategy it is compared with.
    pub b: String,
    /// The compared sweep column (default `cost`).
    #[serde(default = "default_metric")]
    pub metric: String,
    /// The grid axis along the heatmap's x.
    pub x: String,
    /// The grid axis along the heatmap's y.
    pub y: String,
}

fn default_metric() -> String {
    "cost".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    compare: Option<BreakEven>,
    #[serde(default)]
    base: toml::Table,
    grid: toml::Table,
}

/// One axis: a name and its values in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The parameter the axis varies (a generator field, `strategy`, `cache`, ...).
    pub name: String,
    /// Its values, in file order.
    pub values: Vec<toml::Value>,
}

/// A parsed sweep file.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The file it was read from.
    pub path: PathBuf,
    /// The sweep's `name`.
    pub name: String,
    /// The sweep's `description` (empty when absent).
    pub description: String,
    /// The heatmap's question, when the file asks one.
    pub compare: Option<BreakEven>,
    /// The parameters every point starts from (`[base]`).
    pub base: toml::Table,
    /// Axes in key order (the CSV's column order); the last varies fastest.
    pub axes: Vec<Axis>,
    /// Number of points of the grid (checked against the cap when parsed).
    points: usize,
    /// Keep points whose requests exceed the model's context window (refused by default).
    pub allow_over_context: bool,
    /// The `--cache-config` file's table, under cache-config field axes (`anthropic.message_ttl`)
    /// of sweeps over scenario files; empty otherwise.
    pub cache_config: toml::Table,
}

/// Axes that are columns of the summary, not of their own (`scenario`, `strategy`, `cache`).
fn summary_axis(name: &str) -> bool {
    name == "strategy" || name == "cache" || name == files::SCENARIO_AXIS
}

/// Largest grid a sweep file may describe unless `--max-points` says otherwise: each point is a
/// replay (milliseconds to seconds) and a CSV row, so a larger grid is almost surely a mistake.
pub const DEFAULT_MAX_POINTS: u64 = 100_000;

/// Finds a float that is not a finite number (TOML allows `nan` and `inf`) anywhere in `v`.
fn non_finite(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Float(x) if !x.is_finite() => Some(*x),
        toml::Value::Array(a) => a.iter().find_map(non_finite),
        toml::Value::Table(t) => t.values().find_map(non_finite),
        _ => None,
    }
}

/// How a value appears in the CSV and in messages.
pub fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every `[base]` key and `[grid]` axis must be a generator parameter or an option axis: a
/// misspelled one is reported at its line, with the nearest name, before any point runs.
fn check_parameter_names(text: &str, path: &Path, file: &SweepFile) -> Result<(), SweepError> {
    let schema = schemars::schema_for!(GeneratorParams);
    let params: Vec<&str> = schema
        .as_value()
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    for (section, table) in [("base", &file.base), ("grid", &file.grid)] {
        for name in table.keys() {
            let known = params.contains(&name.as_str())
                || (section == "grid" && OPTION_AXES.contains(&name.as_str()));
            if known {
                continue;
            }
            let mut allowed = params.clone();
            if section == "grid" {
                allowed.extend(OPTION_AXES);
            }
            let near = crate::cache::pricing::closest(name, allowed.iter().copied());
            let span = key_span(text, section, name);
            let snippet = span.clone().map(|span| {
                let label = near.map_or("not a generator parameter".to_string(), |n| {
                    format!("did you mean `{n}`?")
                });
                crate::scenario::snippet(text, span, &label)
            });
            return Err(SweepError::UnknownParameter(Box::new(
                error::UnknownParameter {
                    path: path.to_path_buf(),
                    place: span.map(|span| crate::scenario::line_col_of(text, span.start)),
                    section,
                    what: if section == "grid" { "axis" } else { "key" },
                    name: name.clone(),
                    near: near.map(str::to_string),
                    snippet,
                },
            )));
        }
    }
    Ok(())
}

/// Byte span of key `name` in table `[section]` of a sweep file's text (first match).
fn key_span(text: &str, section: &str, name: &str) -> Option<std::ops::Range<usize>> {
    let header = format!("[{section}]");
    let mut in_section = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('[') {
            in_section = t.trim_end().starts_with(&header);
        } else if in_section {
            let key = t.split(['=', ' ']).next().unwrap_or("").trim_matches('"');
            if key == name {
                let start = offset + (line.len() - t.len());
                return Some(start..start + t.find(['=', ' ']).unwrap_or(name.len()));
            }
        }
        offset += line.len();
    }
    None
}

/// The CSV column holding `metric`, and whether higher is better.
pub fn metric_column(metric: &str) -> Option<(&'static str, bool)> {
    match metric {
        "cost" => Some(("cost_usd", false)),
        "hit-rate" => Some(("hit_rate", true)),
        "recomputed" => Some(("recomputed_tokens", false)),
        "ttft" => Some(("ttft_ms", false)),
        _ => None,
    }
}

impl Sweep {
    /// Reads a sweep file with the default cap on the number of grid points.
    pub fn load(path: &Path) -> Result<Sweep, SweepError> {
        Sweep::load_capped(path, DEFAULT_MAX_POINTS)
    }

    /// Reads a sweep file whose grid may have at most `max_points` points.
    pub fn load_capped(path: &Path, max_points: u64) -> Result<Sweep, SweepError> {
        let text =
            crate::budget::read_text(path, "sweep file").map_err(|source| SweepError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        Sweep::parse_capped(&text, path, max_points)
    }

    /// Parses sweep text (`path` names it in errors) with the default cap on grid points.
    pub fn parse(text: &str, path: &Path) -> Result<Sweep, SweepError> {
        Sweep::parse_capped(text, path, DEFAULT_MAX_POINTS)
    }

    /// Parses a sweep file; the grid's point count is computed without overflow and must not
    /// exceed `max_points`.
    pub fn parse_capped(text: &str, path: &Path, max_points: u64) -> Result<Sweep, SweepError> {
        let file: SweepFile = toml::from_str(text).map_err(|source| SweepError::Syntax {
            path: path.to_path_buf(),
            source,
        })?;
        let in_file = || SweepError::in_file(path);
        check_finite(&file).map_err(in_file())?;
        let mut axes = grid_axes(&file).map_err(in_file())?;
        // The size first (a grid too large to list is refused before anything reads it), then
        // the names.
        grid_points(&axes, max_points, "[grid]").map_err(in_file())?;
        check_parameter_names(text, path, &file)?;
        add_default_axes(&mut axes, &file).map_err(in_file())?;
        axes.sort_by(|a, b| a.name.cmp(&b.name));
        check_option_axes(&axes).map_err(in_file())?;
        if let Some(c) = &file.compare {
            check_compare(c, &axes).map_err(in_file())?;
        }
        let points = grid_points(&axes, max_points, "[grid]").map_err(in_file())?;
        Ok(Sweep {
            path: path.to_path_buf(),
            name: file.name,
            description: file.description,
            compare: file.compare,
            base: file.base,
            axes,
            points,
            allow_over_context: false,
            cache_config: toml::Table::new(),
        })
    }

    /// Number of points in the whole grid.
    pub fn len(&self) -> usize {
        self.points
    }

    /// Whether the grid has no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The point with this index (0-based; the last axis varies fastest).
    pub fn point(&self, index: usize) -> Vec<&toml::Value> {
        let mut rest = index;
        let mut out = vec![&self.axes[0].values[0]; self.axes.len()];
        for (i, a) in self.axes.iter().enumerate().rev() {
            out[i] = &a.values[rest % a.values.len()];
            rest /= a.values.len();
        }
        out
    }

    /// The CSV header: `point`, one column per axis except strategy and cache, then the summary
    /// columns (which carry strategy and cache).
    pub fn header(&self) -> Vec<String> {
        let mut h = vec!["point".to_string()];
        h.extend(
            self.axes
                .iter()
                .filter(|a| !summary_axis(&a.name))
                .map(|a| a.name.clone()),
        );
        h.extend(SUMMARY_COLUMNS.iter().map(|s| s.to_string()));
        h
    }

    /// Replays one point and returns its CSV row.
    pub fn run_point(
        &self,
        index: usize,
        source: &dyn ScenarioSource,
        env: &ReplayEnv,
    ) -> Result<Vec<String>, SweepError> {
        let values = self.point(index);
        let mut params = self.base.clone();
        let mut strategy_name = String::new();
        let mut cache_name = String::new();
        let mut keepalive = None;
        let mut env = env.clone();
        let fields: Vec<(&str, &toml::Value)> = self
            .axes
            .iter()
            .zip(&values)
            .filter(|(a, _)| files::is_cache_field(&a.name))
            .map(|(a, v)| (a.name.as_str(), *v))
            .collect();
        if !fields.is_empty() {
            env.caches = files::cache_config_with(&self.cache_config, &fields)?;
        }
        let mut cells = vec![(index + 1).to_string()];
        for (axis, v) in self.axes.iter().zip(&values) {
            if source.takes(&axis.name) {
                params.insert(axis.name.clone(), (*v).clone());
            }
            match axis.name.as_str() {
                "strategy" => strategy_name = show(v),
                "cache" => cache_name = show(v),
                files::SCENARIO_AXIS => {}
                name if files::is_cache_field(name) => cells.push(show(v)),
                "ttl" => {
                    set_ttl(&mut env.caches, parse_ttl(&show(v))?);
                    cells.push(show(v));
                }
                "keepalive" => {
                    keepalive = Some(parse_keepalive(&show(v))?);
                    cells.push(show(v));
                }
                name => {
                    params.insert(name.to_string(), (*v).clone());
                    cells.push(show(v));
                }
            }
        }
        let place = |e: SweepError| SweepError::Point {
            path: self.path.clone(),
            index: index + 1,
            values: self
                .axes
                .iter()
                .zip(&values)
                .map(|(a, v)| format!("{}={}", a.name, show(v)))
                .collect::<Vec<_>>()
                .join(", "),
            source: Box::new(e),
        };
        let mut session = source.session(&params).map_err(place)?;
        if let Some(every) = keepalive {
            session.scenario.set_keepalive(every);
            // The pings are requests: counted against the step budget before the replay, as
            // a scenario's own `keepalive` is at load.
            crate::budget::check_scenario(&session.scenario, &session.path)
                .map_err(|e| place(e.into()))?;
        }
        let strategies: Vec<Box<dyn Strategy>> = strategy::parse_list(&strategy_name)?;
        let mut model = cache::build_with(&cache_name, &env.prices, &env.caches)?;
        let replay = engine::replay(&session, strategies[0].as_ref(), model.as_mut(), &env)
            .map_err(|e| place(e.into()))?;
        if !self.allow_over_context {
            if let Some(why) = crate::metrics::first_overrun(&replay.rows, &env.prices) {
                return Err(place(SweepError::OverContext { why }));
            }
        }
        cells.extend(replay.summary().cells());
        Ok(cells)
    }
}

/// Every value of `[base]` and `[grid]` is a finite number where it is a number.
fn check_finite(file: &SweepFile) -> Result<(), SweepError> {
    for (section, table) in [("base", &file.base), ("grid", &file.grid)] {
        for (name, v) in table {
            if let Some(value) = non_finite(v) {
                return Err(SweepError::NotFinite {
                    section,
                    name: name.clone(),
                    value,
                });
            }
        }
    }
    Ok(())
}

/// The axes `[grid]` lists, each a non-empty list of values and none also in `[base]`.
fn grid_axes(file: &SweepFile) -> Result<Vec<Axis>, SweepError> {
    let mut axes = Vec::new();
    for (name, v) in &file.grid {
        let values = match v {
            toml::Value::Array(a) if !a.is_empty() => a.clone(),
            _ => return Err(SweepError::NotAList { name: name.clone() }),
        };
        if file.base.contains_key(name) {
            return Err(SweepError::BaseAndGrid { name: name.clone() });
        }
        axes.push(Axis {
            name: name.clone(),
            values,
        });
    }
    Ok(axes)
}

/// A grid without a `strategy` axis takes `[compare]`'s two; one without `cache` the default.
fn add_default_axes(axes: &mut Vec<Axis>, file: &SweepFile) -> Result<(), SweepError> {
    let has = |axes: &[Axis], n: &str| axes.iter().any(|a| a.name == n);
    if !has(axes, "strategy") {
        let Some(c) = &file.compare else {
            return Err(SweepError::NoStrategy);
        };
        axes.push(Axis {
            name: "strategy".into(),
            values: vec![c.a.clone().into(), c.b.clone().into()],
        });
    }
    if !has(axes, "cache") {
        axes.push(Axis {
            name: "cache".into(),
            values: vec![cache::DEFAULT_CACHE.into()],
        });
    }
    Ok(())
}

/// Every value of an option axis (strategy, cache, ttl, keepalive) is a name plancache knows.
fn check_option_axes(axes: &[Axis]) -> Result<(), SweepError> {
    for axis in axes {
        if !OPTION_AXES.contains(&axis.name.as_str()) {
            continue;
        }
        for v in &axis.values {
            let name = v.as_str().ok_or_else(|| SweepError::NotAName {
                axis: axis.name.clone(),
                value: v.to_string(),
            })?;
            check_option_value(&axis.name, name).map_err(SweepError::grid_value(&axis.name))?;
        }
    }
    Ok(())
}

/// One value of the option axis `axis`.
fn check_option_value(axis: &str, name: &str) -> Result<(), SweepError> {
    match axis {
        "strategy" => strategy::parse_list(name).map(|_| ())?,
        "ttl" => parse_ttl(name).map(|_| ())?,
        "keepalive" => parse_keepalive(name).map(|_| ())?,
        _ if !cache::CACHE_NAMES.contains(&name) => {
            return Err(SweepError::UnknownCache {
                name: name.to_string(),
                suggestion: String::new(),
            })
        }
        _ => {}
    }
    Ok(())
}

/// `[compare]` names a known metric, two generator axes of the grid and two of its strategies.
fn check_compare(c: &BreakEven, axes: &[Axis]) -> Result<(), SweepError> {
    if metric_column(&c.metric).is_none() {
        return Err(SweepError::CompareMetric {
            metric: c.metric.clone(),
        });
    }
    for (key, v) in [("x", &c.x), ("y", &c.y)] {
        if !axes.iter().any(|a| &a.name == v) || OPTION_AXES.contains(&v.as_str()) {
            return Err(SweepError::CompareAxis {
                key,
                value: v.clone(),
                axes: axes
                    .iter()
                    .filter(|a| !OPTION_AXES.contains(&a.name.as_str()))
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    let strategies = axes
        .iter()
        .find(|a| a.name == "strategy")
        .map(|a| a.values.iter().map(show).collect::<Vec<_>>())
        .unwrap_or_default();
    for s in [&c.a, &c.b] {
        if !strategies.contains(s) {
            return Err(SweepError::CompareStrategy { name: s.clone() });
        }
    }
    Ok(())
}

/// The product of the axis lengths, or an error naming the limit when it exceeds `max_points`
/// (or any integer); `scope` names the grid in the error (`[grid]`, `the grid`).
fn grid_points(axes: &[Axis], max_points: u64, scope: &'static str) -> Result<usize, SweepError> {
    let mut n: u64 = 1;
    for a in axes {
        n = n
            .checked_mul(a.values.len() as u64)
            .filter(|n| *n <= max_points)
            .ok_or_else(|| SweepError::TooManyPoints {
                scope,
                max: max_points,
                lengths: axes
                    .iter()
                    .map(|a| format!("{} {}", a.name, a.values.len()))
                    .collect::<Vec<_>>()
                    .join(" x "),
            })?;
    }
    usize::try_from(n).map_err(|_| SweepError::Unindexable { scope, points: n })
}

/// Sets the TTL class of every breakpoint of the `anthropic*` cache models (the `ttl` axis and
/// `--ttl`).
pub fn set_ttl(caches: &mut cache::CacheConfig, ttl: Ttl) {
    for c in [
        &mut caches.anthropic,
        &mut caches.anthropic_auto,
        &mut caches.anthropic_explicit,
    ] {
        c.system_ttl = ttl;
        c.message_ttl = ttl;
    }
}

/// `5m` or `1h`.
pub fn parse_ttl(s: &str) -> Result<Ttl, SweepError> {
    match s {
        "5m" => Ok(Ttl::FiveMinutes),
        "1h" => Ok(Ttl::OneHour),
        other => Err(SweepError::Ttl {
            value: other.to_string(),
        }),
    }
}

/// Sessions from the seeded scenario generator: the point's parameters are `GeneratorParams`
/// fields (unnamed ones keep their defaults).
pub struct Generated {
    tokenizers: Vec<Arc<Tokenizer>>,
}

impl Default for Generated {
    fn default() -> Self {
        Generated {
            tokenizers: [Encoding::O200kBase, Encoding::Cl100kBase]
                .into_iter()
                .map(|e| Arc::new(Tokenizer::new(e)))
                .collect(),
        }
    }
}

impl ScenarioSource for Generated {
    fn session(&self, params: &toml::Table) -> Result<Session, SweepError> {
        let p: GeneratorParams = toml::Value::Table(params.clone())
            .try_into()
            .map_err(|source| SweepError::GeneratorParams { source })?;
        p.validate().map_err(SweepError::InvalidParams)?;
        let scenario = generate(&p);
        let text = to_toml(&scenario)?;
        let tok = self
            .tokenizers
            .iter()
            .find(|t| t.encoding() == scenario.tokenizer)
            .cloned()
            .unwrap_or_else(|| Arc::new(Tokenizer::new(scenario.tokenizer)));
        let path = PathBuf::from(format!("{}.toml", scenario.name));
        Ok(Session::new(scenario, &path, &text, tok)?)
    }
}

/// A deterministic slice of the grid: shard `i` of `n` (1-based) takes points `i-1, i-1+n, ...`,
/// so shards get interleaved points and similar amounts of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl Shard {
    /// `I/N` with 1 <= I <= N.
    pub fn parse(s: &str) -> Result<Shard, SweepError> {
        let bad = || SweepError::Shard(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The whole grid as one shard (`1/1`).
    pub fn all() -> Shard {
        Shard { index: 1, count: 1 }
    }

    /// `VAR/N`: shard `$VAR + 1` of `N`, the index read 0-based from the environment variable
    /// `VAR` (a Kubernetes indexed Job sets `JOB_COMPLETION_INDEX` to 0..N-1 in every pod).
    pub fn from_env(s: &str) -> Result<Shard, SweepError> {
        Shard::from_lookup(s, |v| std::env::var(v).ok())
    }

    /// [`Shard::from_env`] with the variables read by `get`.
    pub fn from_lookup(s: &str, get: impl Fn(&str) -> Option<String>) -> Result<Shard, SweepError> {
        let spec = s.to_string();
        let Some((var, n)) = s.split_once('/') else {
            return Err(SweepError::ShardEnvSpec { spec });
        };
        let Some(count) = n.trim().parse::<usize>().ok().filter(|&c| c > 0) else {
            let count = n.to_string();
            return Err(SweepError::ShardEnvCount { spec, count });
        };
        let var = var.to_string();
        let Some(value) = get(var.trim()) else {
            return Err(SweepError::ShardEnvUnset { spec, var });
        };
        match value.trim().parse::<usize>() {
            Ok(i) if i < count => Ok(Shard {
                index: i + 1,
                count,
            }),
            _ => Err(SweepError::ShardEnvIndex {
                spec,
                var,
                value,
                max: count - 1,
            }),
        }
    }

    /// The point indices (0-based) of this shard, lazily.
    pub fn indices(self, total: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        (self.index - 1..total.max(self.index - 1)).step_by(self.count)
    }

    /// Number of points of this shard in a grid of `total`.
    pub fn len(self, total: usize) -> usize {
        total.saturating_sub(self.index - 1).div_ceil(self.count)
    }

    /// The shard a file written by `plancache sweep --shard I/N` holds, from its name
    /// (`shard-I-of-N.csv`).
    pub fn of_file_name(path: &Path) -> Option<Shard> {
        let stem = path.file_name()?.to_str()?.strip_suffix(".csv")?;
        let (i, n) = stem.strip_prefix("shard-")?.split_once("-of-")?;
        Shard::parse(&format!("{i}/{n}")).ok()
    }
}

/// Runs the points of a shard in parallel; rows come back in point order. Shows a progress bar
/// when stderr is a terminal.
pub fn run(
    sweep: &Sweep,
    shard: Shard,
    source: &dyn ScenarioSource,
    env: &ReplayEnv,
) -> Result<Vec<Vec<String>>, SweepError> {
    let total = sweep.len();
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(shard.len(total) as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:40}] {pos}/{len} points, {eta} left",
        ) {
            b.set_style(style.progress_chars("=> "));
        }
        b.set_prefix(sweep.name.clone());
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    // Every point runs; the first failure in point order is reported, so the message does not
    // depend on thread timing.
    // Points are generated from their index as they run; no list of indices is built.
    let results: Vec<Result<Vec<String>, SweepError>> = (0..shard.len(total))
        .into_par_iter()
        .map(|k| {
            // A signal stops the sweep: the remaining points fail fast.
            crate::signals::check()?;
            let r = sweep.run_point(shard.index - 1 + k * shard.count, source, env);
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    results.into_iter().collect()
}

/// Without the sweep file, the shard files' names must show that every shard of one sweep is
/// here: `shard-I-of-N.csv` for every I of one N.
fn check_shard_names(inputs: &[(PathBuf, String)]) -> Result<(), SweepError> {
    let mut count = None;
    let mut seen = std::collections::BTreeSet::new();
    for (path, _) in inputs {
        let Some(shard) = Shard::of_file_name(path) else {
            return Err(SweepError::ShardName { path: path.clone() });
        };
        match count {
            None => count = Some(shard.count),
            Some(other) if other != shard.count => {
                return Err(SweepError::ShardCounts {
                    path: path.clone(),
                    count: shard.count,
                    other,
                })
            }
            Some(_) => {}
        }
        seen.insert(shard.index);
    }
    if let Some(n) = count {
        let absent: Vec<String> = (1..=n)
            .filter(|i| !seen.contains(i))
            .take(12)
            .map(|i| format!("shard-{i}-of-{n}.csv"))
            .collect();
        if !absent.is_empty() {
            return Err(SweepError::MissingShards {
                given: seen.len(),
                n,
                missing: absent.join(", "),
                more: n - seen.len() > absent.len(),
            });
        }
    }
    Ok(())
}

/// CSV bytes of a header and rows.
pub fn to_csv(header: &[String], rows: &[Vec<String>]) -> Result<Vec<u8>, SweepError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header)?;
    for r in rows {
        w.write_record(r)?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// Parsed sweep CSV: header and rows.
pub fn read_csv(path: &Path, text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), SweepError> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r
        .headers()
        .map_err(|source| SweepError::NotCsv {
            path: path.to_path_buf(),
            source,
        })?
        .iter()
        .map(String::from)
        .collect();
    if header.first().map(String::as_str) != Some("point") {
        return Err(SweepError::NoPointColumn {
            path: path.to_path_buf(),
        });
    }
    let mut rows = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|source| SweepError::CsvRecord {
            path: path.to_path_buf(),
            source,
        })?;
        rows.push(rec.iter().map(String::from).collect());
    }
    Ok((header, rows))
}

/// Refuses rows no replay can produce (a shard is the same kind of figure file as a gate's
/// baseline): every summary figure a finite number of at least 0, a hit rate of at most 1, a cost
/// of at most `cap` per request ([`crate::compare::figures`]); and a header naming a column
/// twice.
fn check_rows(
    path: &Path,
    header: &[String],
    rows: &[Vec<String>],
    cap: f64,
) -> Result<(), SweepError> {
    use crate::compare::figures;
    for (i, h) in header.iter().enumerate() {
        if let Some(j) = header[..i].iter().position(|x| x == h) {
            return Err(SweepError::DuplicateColumn {
                path: path.to_path_buf(),
                name: h.clone(),
                first: j + 1,
                second: i + 1,
            });
        }
    }
    let col = |name: &str| header.iter().position(|h| h == name);
    let numeric = &SUMMARY_COLUMNS[3..];
    for (k, row) in rows.iter().enumerate() {
        let line = k + 2;
        let value = |name: &str| -> Result<Option<f64>, SweepError> {
            let Some(c) = col(name) else { return Ok(None) };
            let cell = row.get(c).map(String::as_str).unwrap_or("");
            let bad = |why: &'static str| SweepError::BadCell {
                path: path.to_path_buf(),
                line,
                column: name.to_string(),
                cell: cell.to_string(),
                why,
            };
            let v: f64 = cell.trim().parse().map_err(|_| bad("is not a number"))?;
            figures::non_negative(v).map(Some).map_err(bad)
        };
        for name in numeric {
            value(name)?;
        }
        let (Some(hit), Some(cost)) = (value("hit_rate")?, value("cost_usd")?) else {
            continue;
        };
        figures::check_summary(
            &format!("{}:{line}", path.display()),
            hit,
            cost,
            value("requests")?,
            cap,
        )?;
    }
    Ok(())
}

/// Joins shard outputs into the bytes the unsharded sweep writes: same header, rows in point
/// order. With `expected` (the grid's size, from the sweep file), checks that every point
/// 1..=expected is present exactly once; without it, the shards must show themselves complete:
/// their names `shard-I-of-N.csv` must cover every I of one N and their points must run 1..=max
/// without a gap.
pub fn merge(
    inputs: &[(PathBuf, String)],
    expected: Option<usize>,
) -> Result<(Vec<String>, Vec<Vec<String>>), SweepError> {
    let mut header: Option<(Vec<String>, &Path)> = None;
    let mut by_point: BTreeMap<usize, (Vec<String>, &Path, usize)> = BTreeMap::new();
    let cap = crate::compare::figures::request_cap(
        &crate::cache::PriceTable::bundled(),
        &crate::budget::Budget::current(),
    );
    for (path, text) in inputs {
        let (h, rows) = read_csv(path, text)?;
        check_rows(path, &h, &rows, cap)?;
        match &header {
            None => header = Some((h, path)),
            Some((first, fp)) if *first != h => {
                return Err(SweepError::HeaderDiffers {
                    path: path.clone(),
                    first: fp.to_path_buf(),
                })
            }
            Some(_) => {}
        }
        for (k, row) in rows.into_iter().enumerate() {
            let p: usize = row[0].parse().map_err(|_| SweepError::PointNotNumber {
                path: path.clone(),
                line: k + 2,
                value: row[0].clone(),
            })?;
            if let Some((_, other, first)) = by_point.get(&p) {
                return Err(SweepError::DuplicatePoint {
                    first: other.to_path_buf(),
                    first_line: *first,
                    path: path.clone(),
                    line: k + 2,
                    point: p,
                });
            }
            by_point.insert(p, (row, path, k + 2));
        }
    }
    let Some((header, _)) = header else {
        return Err(SweepError::NoShards);
    };
    if expected.is_none() {
        check_shard_names(inputs)?;
    }
    let n = match expected {
        Some(n) => {
            if let Some((&point, (_, path, _))) = by_point.iter().find(|(&p, _)| p == 0 || p > n) {
                return Err(SweepError::PointOutsideGrid {
                    path: path.to_path_buf(),
                    point,
                    n,
                });
            }
            n
        }
        None => by_point.keys().next_back().copied().unwrap_or(0),
    };
    if by_point.len() != n {
        // Only the first few missing points are listed, found by walking the present ones: the
        // grid itself is never materialised.
        let mut missing = Vec::new();
        let mut next = 1;
        for &p in by_point.keys().chain(std::iter::once(&(n + 1))) {
            while next < p && missing.len() < 12 {
                missing.push(next.to_string());
                next += 1;
            }
            next = p + 1;
        }
        let absent = n - by_point.len();
        return Err(SweepError::MissingPoints {
            present: by_point.len(),
            n,
            more: absent.saturating_sub(missing.len()),
            missing: missing.join(", "),
        });
    }
    Ok((header, by_point.into_values().map(|(r, _, _)| r).collect()))
}

/// Where clearing the context after approval starts to pay, for one combination of the other
/// columns of a sweep with `clear_context` and `implementation_turns` axes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClearContextBreakEven {
    /// The fixed columns, `name=value` joined by `, ` (strategy, cache, other axes).
    pub facet: String,
    /// Fewest implementation turns of the grid from which every point with
    /// `clear_context = true` costs no more than its `false` twin; `None`: not within the grid.
    pub turns: Option<u64>,
    /// Cost of keeping minus cost of clearing (USD) at each implementation-turns value, in order.
    pub savings: Vec<(u64, f64)>,
}

impl ClearContextBreakEven {
    /// Requests after approval at the break-even: the generator's implementation turns plus its
    /// closing reply.
    pub fn requests(&self) -> Option<u64> {
        self.turns.map(|t| t + 1)
    }

    /// One line for the terminal.
    pub fn line(&self) -> String {
        let what = match (self.turns, self.requests()) {
            (Some(t), Some(r)) => format!(
                "clearing context after approval pays for itself from {r} request{} after approval (implementation_turns = {t})",
                if r == 1 { "" } else { "s" }
            ),
            _ => "clearing context after approval does not pay for itself within the grid".into(),
        };
        let savings = self
            .savings
            .iter()
            .map(|(t, d)| format!("{t}: {d:+.4}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{what} [{}]; saving in USD by implementation_turns: {savings}",
            self.facet
        )
    }
}

/// The break-even of clearing the context after approval, from a sweep's header and rows
/// (empty unless the grid has `clear_context` and `implementation_turns` axes).
pub fn clear_context_break_even(
    header: &[String],
    rows: &[Vec<String>],
) -> Result<Vec<ClearContextBreakEven>, SweepError> {
    let col = |n: &str| header.iter().position(|h| h == n);
    let (Some(clear), Some(turns), Some(cost)) = (
        col("clear_context"),
        col("implementation_turns"),
        col("cost_usd"),
    ) else {
        return Ok(Vec::new());
    };
    let first_summary = header.len() - SUMMARY_COLUMNS.len();
    let fixed: Vec<usize> = (1..first_summary)
        .filter(|&i| i != clear && i != turns)
        .chain(["strategy", "cache"].iter().filter_map(|n| col(n)))
        .collect();
    let num = |row: &Vec<String>, i: usize| -> Result<f64, SweepError> {
        row[i].parse::<f64>().map_err(|_| SweepError::NotANumber {
            value: row[i].clone(),
            column: header[i].clone(),
        })
    };
    // facet -> turns -> [keep cost, clear cost]
    let mut groups: BTreeMap<String, BTreeMap<u64, [Option<f64>; 2]>> = BTreeMap::new();
    for row in rows {
        let facet = fixed
            .iter()
            .map(|&i| format!("{}={}", header[i], row[i]))
            .collect::<Vec<_>>()
            .join(", ");
        let t = num(row, turns)? as u64;
        let k = usize::from(row[clear] == "true");
        groups.entry(facet).or_default().entry(t).or_default()[k] = Some(num(row, cost)?);
    }
    Ok(groups
        .into_iter()
        .map(|(facet, by_turns)| {
            let savings: Vec<(u64, f64)> = by_turns
                .iter()
                .filter_map(|(t, c)| Some((*t, c[0]? - c[1]?)))
                .collect();
            // The first value from which clearing never costs more, within the grid.
            let turns = savings
                .iter()
                .rposition(|(_, d)| *d < 0.0)
                .map_or(Some(0), |k| Some(k + 1))
                .and_then(|k| savings.get(k).map(|(t, _)| *t));
            ClearContextBreakEven {
                facet,
                turns,
                savings,
            }
        })
        .collect())
}

#[cfg(test)]
mod shard_tests {
    use super::Shard;

    #[test]
    fn shard_from_env_reads_a_zero_based_index() {
        let env = |v: &str| (v == "JOB_COMPLETION_INDEX").then(|| "2".to_string());
        // Index 2 (0-based) of 4 is shard 3/4, which takes points 3, 7, 11, ... (1-based).
        let s = Shard::from_lookup("JOB_COMPLETION_INDEX/4", env).unwrap();
        assert_eq!(s, Shard { index: 3, count: 4 });
        assert_eq!(s.indices(12).collect::<Vec<_>>(), [2, 6, 10]);
        let e = Shard::from_lookup("JOB_COMPLETION_INDEX/2", env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("JOB_COMPLETION_INDEX=2") && e.contains("0 to 1"),
            "{e}"
        );
        assert!(Shard::from_lookup("OTHER/4", env)
            .unwrap_err()
            .to_string()
            .contains("OTHER is not set"));
        assert!(Shard::from_lookup("JOB_COMPLETION_INDEX", env).is_err());
        assert!(Shard::from_lookup("JOB_COMPLETION_INDEX/0", env).is_err());
    }
}
