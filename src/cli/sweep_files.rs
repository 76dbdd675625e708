//! `plancache sweep SCENARIO... -L NAME=A,B`: a grid over the user's own scenario files,
//! printed as a table with one verdict per combination of the other axes (how each value of the
//! last axis compares with its first value), and written as sweep.csv with `--out`.

use std::path::PathBuf;

use super::common::{check_models, scenario_paths};
use super::params::ParamArgs;
use super::{output, CliError};
use plancache::engine::ReplayEnv;
use plancache::export::{align, write_atomic, OutputDir};
use plancache::sweep::files::ScenarioFiles;
use plancache::sweep::{self, show, Axis, Shard, Sweep};

/// What a sweep over scenario files needs from the command line.
pub struct FileSweep<'a> {
    /// Scenario files or directories.
    pub files: &'a [PathBuf],
    /// The `-L` axes, in command-line order.
    pub lists: &'a [Axis],
    /// `--model`, `--ttl`, `--keepalive`, `--set`, applied to every point.
    pub params: &'a ParamArgs,
    /// `--strategy` (default `all`) when there is no `-L strategy=`.
    pub strategy: Option<&'a str>,
    /// `--cache` (default anthropic) when there is no `-L cache=`.
    pub cache: Option<&'a str>,
    /// `--pricing FILE` and `--price SPEC`.
    pub pricing: &'a super::common::PricingArgs,
    /// `--cache-config FILE`.
    pub cache_config: Option<&'a std::path::Path>,
    /// `--out DIR`: also write DIR/sweep.csv.
    pub out: Option<&'a std::path::Path>,
    /// `--max-points`.
    pub max_points: u64,
    /// `--allow-over-context`.
    pub allow_over_context: bool,
}

/// The axes of the grid: implicit `strategy` and `cache` (from the flags) first, then `-L`.
fn axes(a: &FileSweep<'_>) -> Result<Vec<Axis>, CliError> {
    let given = |n: &str| a.lists.iter().any(|l| l.name == n);
    let mut out = Vec::new();
    if !given("strategy") {
        let names: Vec<toml::Value> = super::common::strategies(a.strategy.unwrap_or("all"))?
            .iter()
            .map(|s| toml::Value::String(s.name().to_string()))
            .collect();
        out.push(Axis {
            name: "strategy".into(),
            values: names,
        });
    } else if a.strategy.is_some() {
        return Err(CliError::input(
            "--strategy and -L strategy=... both name the strategies\n  hint: keep one",
        ));
    }
    if !given("cache") {
        let caches = super::common::cache_list(a.cache.unwrap_or(plancache::cache::DEFAULT_CACHE))?;
        out.push(Axis {
            name: "cache".into(),
            values: caches.into_iter().map(toml::Value::String).collect(),
        });
    } else if a.cache.is_some() {
        return Err(CliError::input(
            "--cache and -L cache=... both name the cache models\n  hint: keep one",
        ));
    }
    out.extend(a.lists.iter().cloned());
    Ok(out)
}

/// Runs the grid and prints the table and the verdicts.
pub fn run(a: FileSweep<'_>) -> Result<(), CliError> {
    if let Some(dir) = a.out {
        super::common::check_out_dir(dir, "sweep writes a directory (sweep.csv)")?;
    }
    let paths = scenario_paths(a.files)?;
    let cache_table = match a.cache_config {
        Some(p) => plancache::budget::read_text(p, "cache config")
            .map_err(|e| format!("{}: {e}", p.display()))
            .and_then(|t| {
                t.parse::<toml::Table>()
                    .map_err(|e| format!("{}: invalid TOML: {e}", p.display()))
            })
            .map_err(CliError::input)?,
        None => toml::Table::new(),
    };
    let mut env = super::common::replay_env(a.pricing, a.cache_config)?;
    a.params.apply_env(&mut env);
    let mut spec = Sweep::over_files(&paths, axes(&a)?, cache_table, a.max_points)?;
    spec.allow_over_context = a.allow_over_context;
    let source = ScenarioFiles::read(&paths, a.params.overrides())?;
    let sessions = source.base_sessions()?;
    check_models(&sessions, &mut env.prices)?;
    check_model_axis(&spec, &mut env)?;
    let rows = sweep::run(&spec, Shard::all(), &source, &env)?;
    let header = spec.header();
    output::stdout_text(&table(&spec, &header, &rows))?;
    if let Some(dir) = a.out {
        let bytes = sweep::to_csv(&header, &rows)?;
        let out = OutputDir::begin(dir, "sweep")?;
        write_atomic(&out.path().join("sweep.csv"), &bytes)?;
        out.commit()?;
        eprintln!("wrote {} ({} points)", dir.display(), rows.len());
    }
    Ok(())
}

/// Every `-L model=` value must be priced (with the table's "did you mean").
fn check_model_axis(spec: &Sweep, env: &mut ReplayEnv) -> Result<(), CliError> {
    let Some(axis) = spec.axes.iter().find(|a| a.name == "model") else {
        return Ok(());
    };
    let models: Vec<String> = axis.values.iter().map(show).collect();
    for m in &models {
        if env.prices.get(m).is_none() {
            return Err(CliError::input(format!(
                "-L model={m}: {}\n  hint: fix the id, add the model with --pricing FILE (docs/pricing.md)",
                env.prices.unknown_model(m)
            )));
        }
    }
    env.prices.pin(models.iter().map(String::as_str));
    Ok(())
}

/// Column of `name` in the sweep CSV header.
fn col(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or(0)
}

/// The table: one column per axis, then the summary's figures; then the verdicts.
fn table(spec: &Sweep, header: &[String], rows: &[Vec<String>]) -> String {
    let figures = [
        ("reqs", "requests"),
        ("prompt", "prompt_tokens"),
        ("cached", "cached_tokens"),
        ("written", "cache_write_tokens"),
        ("hit rate", "hit_rate"),
        ("cost $", "cost_usd"),
    ];
    let mut head: Vec<String> = spec.axes.iter().map(|a| a.name.clone()).collect();
    head.extend(figures.iter().map(|(h, _)| h.to_string()));
    let body: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            // The scenario's name (the summary's first column) rather than its path.
            let mut cells: Vec<String> = spec.point(i).into_iter().map(show).collect();
            cells[0] = row[col(header, "scenario")].clone();
            for (_, c) in figures {
                let cell = &row[col(header, c)];
                cells.push(match c {
                    "hit_rate" => format!("{:.1}%", num(cell) * 100.0),
                    "cost_usd" => format!("{:.4}", num(cell)),
                    _ => cell.clone(),
                });
            }
            cells
        })
        .collect();
    let mut out = align(&head, &body, spec.axes.len());
    let verdicts = verdicts(spec, header, rows);
    if !verdicts.is_empty() {
        out.push('\n');
        for v in verdicts {
            out.push_str(&v);
            out.push('\n');
        }
    }
    out
}

fn num(cell: &str) -> f64 {
    cell.parse().unwrap_or(f64::NAN)
}

/// One line per combination of the other axes and per later value of the last axis that has
/// several values: its cost relative to the first value's.
fn verdicts(spec: &Sweep, header: &[String], rows: &[Vec<String>]) -> Vec<String> {
    let Some(last) = spec.axes.iter().rposition(|a| a.values.len() > 1) else {
        return Vec::new();
    };
    let cost = col(header, "cost_usd");
    let first = &spec.axes[last].values[0];
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let point = spec.point(i);
        if point[last] == first {
            continue;
        }
        // The point with the same other values and the first value of the last axis: the
        // last axis varies fastest, so it is `position` points earlier.
        let pos = spec.axes[last]
            .values
            .iter()
            .position(|v| v == point[last])
            .unwrap_or(0);
        let stride: usize = spec.axes[last + 1..]
            .iter()
            .map(|a| a.values.len())
            .product();
        let Some(base) = rows.get(i - pos * stride) else {
            continue;
        };
        let (c, b) = (num(&row[cost]), num(&base[cost]));
        let label: Vec<String> = spec
            .axes
            .iter()
            .zip(&point)
            .enumerate()
            .filter(|(k, (a, _))| *k != last && a.values.len() > 1)
            .map(|(_, (a, v))| format!("{}={}", a.name, show(v)))
            .collect();
        let name = &spec.axes[last].name;
        let ratio = if b > 0.0 {
            format!("{:.2}×", c / b)
        } else {
            "n/a×".to_string()
        };
        let delta = if c <= b {
            format!("saves ${:.4}", b - c)
        } else {
            format!("adds ${:.4}", c - b)
        };
        out.push(format!(
            "{}{name}={}: {ratio} the cost of {name}={} (${c:.4} vs ${b:.4}, {delta})",
            if label.is_empty() {
                String::new()
            } else {
                format!("{}: ", label.join(", "))
            },
            show(point[last]),
            show(first),
        ));
    }
    out
}
