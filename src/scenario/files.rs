//! Scenario files: the paths a list of inputs names (directories expand to their `*.toml`) and
//! the sessions loaded from them, with `--model` / `--keepalive` / `--set` applied and one shared
//! tokenizer per encoding.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::params::{Overrides, ParamError};
use super::{GeneratorParams, Scenario, ScenarioError, Session};
use crate::budget::InputError;
use crate::prompt::Tokenizer;

/// A scenario file that could not be found, read or loaded.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// No input named and no `./scenarios` directory.
    #[error("no scenario given and ./scenarios does not exist\n  hint: name scenario files (`plancache run my-session.toml`); `plancache generate --out session.toml` writes one, `plancache import claude-code TRANSCRIPT` turns a real session into one")]
    NoScenarios,
    /// A directory that could not be listed.
    #[error("{}: cannot list: {source}", dir.display())]
    List {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A directory with no scenario file.
    #[error("{}: no *.toml scenario files in this directory", dir.display())]
    Empty {
        /// The directory.
        dir: PathBuf,
    },
    /// A scenario file that could not be read.
    #[error("{}: {source}\n  hint: check the path; with no argument plancache reads scenarios/*.toml", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: InputError,
    },
    /// A scenario file within the size limit whose bytes are not UTF-8, with the place.
    #[error("{}: {source}", file.display())]
    NotUtf8 {
        /// The file.
        file: PathBuf,
        /// The offset, line and column of the first bad byte.
        source: super::messages::ReadError,
    },
    /// A `--set` / `--model` / `--keepalive` that does not apply to the file.
    #[error(transparent)]
    Param(Box<ParamError>),
    /// A scenario that is not valid.
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
}

impl From<ParamError> for FilesError {
    fn from(e: ParamError) -> Self {
        FilesError::Param(Box::new(e))
    }
}

impl From<ScenarioError> for FilesError {
    fn from(e: ScenarioError) -> Self {
        FilesError::Scenario(Box::new(e))
    }
}

/// The scenario files named in `inputs` (directories expand to their `*.toml`, sorted), or every
/// file in `./scenarios` when none is named.
pub fn scenario_paths(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, FilesError> {
    let inputs: Vec<PathBuf> = if inputs.is_empty() {
        let dir = Path::new("scenarios");
        if !dir.is_dir() {
            return Err(FilesError::NoScenarios);
        }
        vec![dir.to_path_buf()]
    } else {
        inputs.to_vec()
    };
    let mut out = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&input)
                .map_err(|source| FilesError::List {
                    dir: input.clone(),
                    source,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(FilesError::Empty { dir: input });
            }
            out.extend(files);
        } else {
            out.push(input);
        }
    }
    Ok(out)
}

/// A scenario file's text (at most [`crate::budget::max_input_bytes`]).
pub fn scenario_text(path: &Path) -> Result<String, FilesError> {
    match crate::budget::read_text(path, "scenario") {
        Ok(text) => Ok(text),
        // Within the size limit but not UTF-8: the full reader says where.
        Err(InputError::NotUtf8 { .. }) => {
            super::messages::read_text(path).map_err(|source| FilesError::NotUtf8 {
                file: path.to_path_buf(),
                source,
            })
        }
        Err(source) => Err(FilesError::Read {
            file: path.to_path_buf(),
            source,
        }),
    }
}

/// Loads scenario texts into sessions, one tokenizer per encoding shared by all of them.
#[derive(Debug, Default)]
pub struct Loader {
    /// The tokenizers made so far, one per encoding.
    tokenizers: Vec<Arc<Tokenizer>>,
    /// The sessions loaded so far, in order.
    sessions: Vec<Session>,
}

impl Loader {
    /// Loads `text` (read from `path`) with `overrides` applied before any check runs.
    pub fn add(
        &mut self,
        path: &Path,
        text: &str,
        overrides: &Overrides,
    ) -> Result<(), FilesError> {
        let text = overrides.apply(text, path)?;
        let scenario = super::load_str(&text, path)?;
        let tok = match self
            .tokenizers
            .iter()
            .find(|t| t.encoding() == scenario.tokenizer)
        {
            Some(t) => t.clone(),
            None => {
                let t = Arc::new(Tokenizer::new(scenario.tokenizer));
                self.tokenizers.push(t.clone());
                t
            }
        };
        self.sessions
            .push(Session::new(scenario, path, &text, tok)?);
        Ok(())
    }

    /// The sessions, each with its output key, and a note for every key renamed to keep keys
    /// distinct.
    pub fn finish(mut self) -> Result<(Vec<Session>, Vec<String>), FilesError> {
        let notes = Session::assign_output_keys(&mut self.sessions)?;
        Ok((self.sessions, notes))
    }
}

/// Loads every scenario file of `paths` as written (the notes of renamed output keys dropped).
pub fn load_sessions(paths: &[PathBuf]) -> Result<Vec<Session>, FilesError> {
    let mut loader = Loader::default();
    for path in paths {
        loader.add(path, &scenario_text(path)?, &Overrides::default())?;
    }
    Ok(loader.finish()?.0)
}

/// The scenario format's JSON Schema, pretty-printed.
pub fn scenario_schema() -> String {
    let schema = schemars::schema_for!(Scenario);
    // Serializing a schema (a JSON value) cannot fail.
    serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"
}

/// The generator parameters' JSON Schema, pretty-printed.
pub fn generator_schema() -> String {
    let schema = schemars::schema_for!(GeneratorParams);
    serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"
}
