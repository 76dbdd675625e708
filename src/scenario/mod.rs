//! Scenario files: the script of one agent session.
//!
//! `format` holds the serde types (the file format, documented in `docs/scenario-format.md`),
//! `load` reads and validates a file with errors that name the file, line, column and a fix, and
//! `params` applies `--model` / `--keepalive` / `--set` to a file's TOML before it is loaded, and
//! `session` turns a scenario into ready-made segments (tools, system, reminders) for replay,
//! and `turns` keeps its assistant turns' segments once made, for every replay to share.

pub mod files;
pub mod format;
pub mod generate;
mod load;
pub mod messages;
pub mod params;
mod session;
mod turns;

pub use files::{load_sessions, scenario_paths, FilesError};
pub use format::*;
pub(crate) use generate::Rng;
pub use generate::{generate, to_toml, GeneratorParams, TokenRange};
pub use load::{
    line_col as line_col_of, load_file, load_str, model_place, snippet, ScenarioError, MAX_TOKENS,
};
pub use session::{tool_access, Session, Tool, DEFAULT_WRITE_TOOLS, ENVIRONMENT_SUFFIX};
pub use turns::TurnSegments;
