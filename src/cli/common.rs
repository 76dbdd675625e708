//! Pieces shared by several subcommands: finding and loading scenarios, prices.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::CliError;
use crate::cache::{CacheConfig, PriceTable};
use crate::prompt::Tokenizer;
use crate::scenario::Session;

/// The scenario files named on the command line (directories expand to their `*.toml`), or every
/// file in `./scenarios` when none is named.
pub fn scenario_paths(args: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let inputs: Vec<PathBuf> = if args.is_empty() {
        let dir = Path::new("scenarios");
        if !dir.is_dir() {
            return Err(CliError::input(
                "no scenario given and ./scenarios does not exist\n  hint: name scenario files, e.g. `plancache run scenarios/exercise-3.toml`",
            ));
        }
        vec![dir.to_path_buf()]
    } else {
        args.to_vec()
    };
    let mut out = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&input)
                .map_err(|e| CliError::input(format!("{}: cannot list: {e}", input.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(CliError::input(format!(
                    "{}: no *.toml scenario files in this directory",
                    input.display()
                )));
            }
            out.extend(files);
        } else {
            out.push(input);
        }
    }
    Ok(out)
}

/// Loads every scenario; text content is tokenized with one shared, lazily loaded tokenizer per
/// encoding.
pub fn load_sessions(paths: &[PathBuf]) -> Result<Vec<Session>, CliError> {
    let mut tokenizers: Vec<Arc<Tokenizer>> = Vec::new();
    let mut sessions = Vec::new();
    for path in paths {
        let text = crate::budget::read_text(path, "scenario").map_err(|e| {
            CliError::input(format!(
                "{}: {e}\n  hint: check the path; with no argument plancache reads scenarios/*.toml",
                path.display()
            ))
        })?;
        let scenario =
            crate::scenario::load_str(&text, path).map_err(|e| CliError::input(e.to_string()))?;
        let tok = match tokenizers
            .iter()
            .find(|t| t.encoding() == scenario.tokenizer)
        {
            Some(t) => t.clone(),
            None => {
                let t = Arc::new(Tokenizer::new(scenario.tokenizer));
                tokenizers.push(t.clone());
                t
            }
        };
        let session =
            Session::new(scenario, path, &text, tok).map_err(|e| CliError::input(e.to_string()))?;
        sessions.push(session);
    }
    for note in
        Session::assign_output_keys(&mut sessions).map_err(|e| CliError::input(e.to_string()))?
    {
        eprintln!("note: {note}");
    }
    Ok(sessions)
}

/// The bundled price table, plus a user file when given.
pub fn price_table(file: Option<&Path>) -> Result<PriceTable, CliError> {
    let mut table = PriceTable::bundled();
    if let Some(f) = file {
        table.merge_file(f).map_err(CliError::input)?;
    }
    Ok(table)
}

/// Splits a comma-separated list of cache model names and checks each.
pub fn cache_list(spec: &str) -> Result<Vec<String>, CliError> {
    let names: Vec<String> = spec
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let known = crate::cache::CACHE_NAMES;
    let names = if names.iter().any(|n| n == "all") {
        known.iter().map(|s| s.to_string()).collect()
    } else {
        names
    };
    if names.is_empty() {
        return Err(CliError::input(
            "no cache model given; e.g. --cache anthropic",
        ));
    }
    for n in &names {
        if !known.contains(&n.as_str()) {
            return Err(CliError::input(format!(
                "unknown cache model `{n}`; known models: {}, or `all`",
                known.join(", ")
            )));
        }
    }
    Ok(names)
}

/// The cache-model parameters: documented defaults, overridden by a `--cache-config` file.
pub fn cache_config(file: Option<&Path>) -> Result<CacheConfig, CliError> {
    match file {
        Some(f) => CacheConfig::from_file(f).map_err(CliError::input),
        None => Ok(CacheConfig::default()),
    }
}

/// The prices and cache-model parameters of a replay: the bundled tables plus the user's files.
pub fn replay_env(
    pricing: Option<&Path>,
    cache_config_file: Option<&Path>,
) -> Result<crate::engine::ReplayEnv, CliError> {
    Ok(crate::engine::ReplayEnv {
        prices: price_table(pricing)?,
        caches: cache_config(cache_config_file)?,
        ..crate::engine::ReplayEnv::default()
    })
}

/// Loads the named scenarios (default: ./scenarios) and replays them under every strategy and
/// cache model.
pub fn replay_scenarios(
    scenarios: &[PathBuf],
    strategies: &[Box<dyn crate::strategy::Strategy>],
    caches: &[String],
    env: &crate::engine::ReplayEnv,
) -> Result<crate::engine::RunReport, CliError> {
    let sessions = load_sessions(&scenario_paths(scenarios)?)?;
    crate::engine::run(&sessions, strategies, caches, env)
        .map_err(|e| CliError::input(e.to_string()))
}

/// Fails (exit 1) when strategies made different decisions on the same scenario.
pub fn check_equivalence(report: &crate::engine::RunReport) -> Result<(), CliError> {
    if report.violations.is_empty() {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "strategies made different decisions on the same scenario:\n{}",
            report.violations.join("\n")
        )))
    }
}
