//! Sweeps over the user's own scenario files: the grid's axes are the parameters of
//! [`crate::scenario::params`] (`model`, `keepalive`, any `--set` path such as
//! `steps[5].wait.duration`) and the replay options (`strategy`, `cache`, `ttl`, and cache-config
//! fields such as `anthropic.message_ttl`), given on the command line as
//! `-L model=claude-sonnet-4-6,claude-opus-4-6` (hyperfine's `--parameter-list`). Each point
//! applies its values to the file's TOML before loading it, so every load-time check runs per
//! point.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{grid_points, parse_ttl, show, Axis, ScenarioSource, Sweep, SweepError, OPTION_AXES};
use crate::cache;
use crate::prompt::Tokenizer;
use crate::scenario::params::{Overrides, SetParam};
use crate::scenario::{parse_keepalive, Session};

/// The axis holding the scenario file of each point (always the first).
pub const SCENARIO_AXIS: &str = "scenario";

/// Whether `name` is a cache-config field (`anthropic.message_ttl`): a cache model's table,
/// a dot, a key.
pub fn is_cache_field(name: &str) -> bool {
    name.split_once('.')
        .is_some_and(|(model, key)| cache::CACHE_NAMES.contains(&model) && !key.is_empty())
}

/// Parses `-L NAME=V1,V2,...`.
pub fn parse_list(spec: &str) -> Result<Axis, SweepError> {
    let bad = |why: &'static str| SweepError::ListSpec {
        spec: spec.to_string(),
        why,
    };
    let (name, values) = spec.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let name = name.trim();
    let values: Vec<toml::Value> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| toml::Value::String(v.to_string()))
        .collect();
    if name.is_empty() || values.is_empty() {
        return Err(bad("an axis needs a name and at least one value"));
    }
    Ok(Axis {
        name: name.to_string(),
        values,
    })
}

/// Checks every value of one axis given on the command line.
fn check_axis(axis: &Axis, cache_config: &toml::Table) -> Result<(), SweepError> {
    let name = axis.name.as_str();
    for v in &axis.values {
        let value = show(v);
        check_value(name, v, &value, cache_config).map_err(|e| SweepError::ListValue {
            axis: name.to_string(),
            value: value.clone(),
            source: Box::new(e),
        })?;
    }
    Ok(())
}

/// One value `v` (shown as `value`) of the command-line axis `name`.
fn check_value(
    name: &str,
    v: &toml::Value,
    value: &str,
    cache_config: &toml::Table,
) -> Result<(), SweepError> {
    match name {
        "strategy" => crate::strategy::parse_list(value).map(|_| ())?,
        "cache" if !cache::CACHE_NAMES.contains(&value) => {
            return Err(SweepError::UnknownCache {
                name: value.to_string(),
                suggestion: crate::cache::pricing::did_you_mean(
                    value,
                    cache::CACHE_NAMES.iter().copied(),
                ),
            })
        }
        "cache" | "model" => {}
        "ttl" => parse_ttl(value).map(|_| ())?,
        "keepalive" => parse_keepalive(value).map(|_| ())?,
        SCENARIO_AXIS => return Err(SweepError::ScenarioAxis),
        _ if is_cache_field(name) => cache_config_with(cache_config, &[(name, v)]).map(|_| ())?,
        _ => SetParam::new(name, value)
            .map(|_| ())
            .map_err(|e| SweepError::NotAnAxis {
                source: Box::new(e),
            })?,
    }
    Ok(())
}

/// The cache-model parameters of the `--cache-config` table with some fields replaced.
pub fn cache_config_with(
    base: &toml::Table,
    fields: &[(&str, &toml::Value)],
) -> Result<cache::CacheConfig, SweepError> {
    let mut t = base.clone();
    for (name, v) in fields {
        let Some((model, key)) = name.split_once('.') else {
            continue;
        };
        let entry = t
            .entry(model.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(m) = entry {
            m.insert(key.to_string(), typed(v));
        }
    }
    let text = toml::to_string(&t)?;
    Ok(cache::CacheConfig::from_toml_str(
        &text,
        "the cache-config axes",
    )?)
}

/// A command-line value as TOML (`4096` a number, `true` a boolean), else the string.
fn typed(v: &toml::Value) -> toml::Value {
    match v {
        toml::Value::String(s) => format!("x = {s}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("x"))
            .unwrap_or_else(|| v.clone()),
        other => other.clone(),
    }
}

impl Sweep {
    /// A grid over scenario files: the `scenario` axis (the files, in order), then `axes` in
    /// the order given (the last varies fastest). `cache_config` is the `--cache-config` file's
    /// table (empty without one); cache-config field axes are applied on top of it.
    pub fn over_files(
        files: &[PathBuf],
        axes: Vec<Axis>,
        cache_config: toml::Table,
        max_points: u64,
    ) -> Result<Sweep, SweepError> {
        let mut all = vec![Axis {
            name: SCENARIO_AXIS.into(),
            values: files
                .iter()
                .map(|p| toml::Value::String(p.display().to_string()))
                .collect(),
        }];
        for axis in axes {
            check_axis(&axis, &cache_config)?;
            if all.iter().any(|a| a.name == axis.name) {
                return Err(SweepError::AxisTwice { name: axis.name });
            }
            all.push(axis);
        }
        let points = grid_points(&all, max_points, "the grid")?;
        Ok(Sweep {
            path: files.first().cloned().unwrap_or_default(),
            name: "scenarios".into(),
            description: String::new(),
            compare: None,
            base: toml::Table::new(),
            axes: all,
            points,
            allow_over_context: false,
            cache_config,
        })
    }
}

/// Scenario files as the source of a sweep's sessions: each point's `model`, `keepalive` and
/// path values are applied to the file's TOML (after the command's own `--set`s) before it is
/// loaded.
pub struct ScenarioFiles {
    /// Each file and its text, read once.
    files: Vec<(PathBuf, String)>,
    /// The command's `--model` / `--keepalive` / `--set`, applied before the point's values.
    base: Overrides,
    /// One tokenizer per encoding, shared by the points.
    tokenizers: Mutex<Vec<Arc<Tokenizer>>>,
}

impl ScenarioFiles {
    /// Reads the files (within the size budget).
    pub fn read(paths: &[PathBuf], base: Overrides) -> Result<ScenarioFiles, SweepError> {
        let mut files = Vec::new();
        for p in paths {
            let text =
                crate::budget::read_text(p, "scenario").map_err(|source| SweepError::Read {
                    path: p.clone(),
                    source,
                })?;
            files.push((p.clone(), text));
        }
        Ok(ScenarioFiles {
            files,
            base,
            tokenizers: Mutex::new(Vec::new()),
        })
    }

    fn tokenizer(&self, scenario: &crate::scenario::Scenario) -> Arc<Tokenizer> {
        let mut all = match self.tokenizers.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(t) = all.iter().find(|t| t.encoding() == scenario.tokenizer) {
            return t.clone();
        }
        let t = Arc::new(Tokenizer::new(scenario.tokenizer));
        all.push(t.clone());
        t
    }

    /// The overrides of one point: the command's, then the point's values.
    fn overrides(&self, params: &toml::Table) -> Result<Overrides, SweepError> {
        let mut o = self.base.clone();
        for (name, v) in params {
            match name.as_str() {
                SCENARIO_AXIS => {}
                "model" => o.model = Some(show(v)),
                "keepalive" => o.keepalive = Some(show(v)),
                n if OPTION_AXES.contains(&n) || is_cache_field(n) => {}
                path => o.sets.push(SetParam::new(path, &show(v))?),
            }
        }
        Ok(o)
    }

    /// The file of a point.
    fn file(&self, params: &toml::Table) -> Result<&(PathBuf, String), SweepError> {
        let want = params.get(SCENARIO_AXIS).map(show).unwrap_or_default();
        self.files
            .iter()
            .find(|(p, _)| p.display().to_string() == want)
            .ok_or(SweepError::NoScenarioFile(want))
    }

    /// Loads one file with overrides (the same steps as `plancache run`).
    pub fn load(&self, path: &Path, text: &str, o: &Overrides) -> Result<Session, SweepError> {
        let text = o.apply(text, path)?;
        let scenario = crate::scenario::load_str(&text, path)?;
        let tok = self.tokenizer(&scenario);
        Ok(Session::new(scenario, path, &text, tok)?)
    }

    /// Every file with the command's own overrides, to check them before the grid runs.
    pub fn base_sessions(&self) -> Result<Vec<Session>, SweepError> {
        self.files
            .iter()
            .map(|(p, t)| self.load(p, t, &self.base))
            .collect()
    }
}

impl ScenarioSource for ScenarioFiles {
    fn session(&self, params: &toml::Table) -> Result<Session, SweepError> {
        let (path, text) = self.file(params)?;
        let o = self.overrides(params)?;
        self.load(path, text, &o)
    }

    fn takes(&self, axis: &str) -> bool {
        axis == "keepalive" || axis == SCENARIO_AXIS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_split_on_commas_and_keep_their_order() {
        let a = parse_list("keepalive=off, 4m30s").unwrap();
        assert_eq!(a.name, "keepalive");
        assert_eq!(
            a.values,
            vec![
                toml::Value::String("off".into()),
                toml::Value::String("4m30s".into())
            ]
        );
        assert!(parse_list("model").is_err());
        assert!(parse_list("model=").is_err());
    }

    #[test]
    fn axes_are_checked_with_their_place() {
        let f = [PathBuf::from("s.toml")];
        let e = |spec: &str| {
            Sweep::over_files(&f, vec![parse_list(spec).unwrap()], toml::Table::new(), 100)
                .unwrap_err()
                .to_string()
        };
        assert!(e("steps[2].wait.duraton=1m").contains("did you mean `duration`"));
        assert!(e("ttl=2h").contains("-L ttl=2h"));
        assert!(e("cache=antropic").contains("did you mean `anthropic`"));
        assert!(e("anthropic.no_such_key=1").contains("-L anthropic.no_such_key=1"));
        let ok = Sweep::over_files(
            &f,
            vec![
                parse_list("model=a,b").unwrap(),
                parse_list("anthropic.message_ttl=5m,1h").unwrap(),
            ],
            toml::Table::new(),
            100,
        )
        .unwrap();
        // 1 file x 2 models x 2 TTLs.
        assert_eq!(ok.len(), 4);
    }
}
