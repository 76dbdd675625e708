//! The errors of a validation: a transcript with nothing to compare or that does not import, a
//! stream that does not replay, a report that cannot be written.

use crate::cache::CacheError;
use crate::engine::ReplayError;
use crate::import::ImportError;
use crate::strategy::StrategyError;
use crate::util::ScenarioError;

/// Why transcripts could not be validated.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// A `--strategy` that is not valid.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// A transcript that cannot be read or imported.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The cache model cannot be built.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// An imported stream whose scenario does not load.
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// A stream that does not replay.
    #[error("stream `{stream}`: {source}")]
    Stream {
        /// The stream.
        stream: String,
        /// Why.
        source: ReplayError,
    },
    /// A replay that failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// Every transcript was skipped.
    #[error("no transcript could be replayed ({skipped} skipped): {first}")]
    NoneReplayed {
        /// How many were skipped.
        skipped: usize,
        /// The first one and why (`file: reason`).
        first: String,
    },
    /// A transcript with no request to compare.
    #[error("{source_name}: no API request with usage found ({lines} lines read, {not_interpreted} not interpreted{first_skipped})\n  hint: is this a transcript of the kind given with --kind (claude-code or codex)?")]
    NoUsage {
        /// The transcript's file (or name).
        source_name: String,
        /// Lines read.
        lines: usize,
        /// Records not interpreted.
        not_interpreted: usize,
        /// `; first skipped record: ...`, or nothing.
        first_skipped: String,
    },
    /// The CSV report could not be written.
    #[error("cannot write CSV: {0}")]
    Csv(String),
}

impl From<ScenarioError> for ValidateError {
    fn from(e: ScenarioError) -> Self {
        ValidateError::Scenario(Box::new(e))
    }
}
