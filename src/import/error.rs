//! The errors of the importers: a transcript or folder that cannot be read, a session given
//! twice, a recorded usage no scenario could hold, an option that is not valid.

use std::path::PathBuf;

use super::discover::{not_read_text, NotRead};
use crate::util::ScenarioError;

/// Why transcripts could not be found, read or turned into scenarios.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A transcript or folder that cannot be read, or a record that no scenario can hold: the
    /// file, the place (`line 12 (request ..., stream ...)`), what, the fix.
    #[error(transparent)]
    File(Box<ScenarioError>),
    /// An entry of a searched folder that cannot be read.
    #[error("{0}")]
    NotRead(NotRead),
    /// A folder where nothing at all can be read.
    #[error("{}: no transcript (*.jsonl) found that can be read\n  hint: give a session file, a session folder, or a projects folder such as ~/.claude/projects{}", root.display(), not_read_lines(.not_read))]
    NothingReadable {
        /// The folder.
        root: PathBuf,
        /// The entries that could not be read.
        not_read: Vec<NotRead>,
    },
    /// Two files that are both the main transcript of one session.
    #[error("{} and {} are both the main transcript of session {session}\n  hint: give each file once", first.display(), second.display())]
    TwoMains {
        /// The first file.
        first: PathBuf,
        /// The second.
        second: PathBuf,
        /// The session.
        session: String,
    },
    /// A `--ttl` that is no cache TTL.
    #[error("`{0}` is not a cache TTL; use 5m or 1h")]
    Ttl(String),
    /// A `--ttl` of `import` that is no TTL choice.
    #[error("`{0}` is not a TTL choice; use auto, version, 5m or 1h")]
    TtlChoice(String),
    /// A transcript kind no harness has.
    #[error("unknown transcript kind `{0}`; known kinds: claude-code, codex")]
    Harness(String),
    /// A scenario that cannot be written as TOML.
    #[error("cannot write the scenario as TOML: {0}")]
    Toml(#[from] toml::ser::Error),
}

impl From<ScenarioError> for ImportError {
    fn from(e: ScenarioError) -> Self {
        ImportError::File(Box::new(e))
    }
}

/// The "not read" list on lines of its own after the hint, when there is one.
fn not_read_lines(not_read: &[NotRead]) -> String {
    if not_read.is_empty() {
        String::new()
    } else {
        format!("\n{}", not_read_text(not_read))
    }
}
