//! The errors of an account run: a session that cannot be read or replayed, a what-if setting
//! that is not valid, a report or synthetic account that cannot be written.

use crate::cache::CacheError;
use crate::engine::ReplayError;
use crate::export::ExportError;
use crate::import::ImportError;
use crate::strategy::StrategyError;
use crate::util::ScenarioError;
use crate::validate::ValidateError;

/// Why an account (or one of its sessions) could not be read, replayed or written.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// A strategy list that is not valid.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// A session's transcripts that cannot be read.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// A session's streams that cannot be imported and loaded.
    #[error(transparent)]
    Prepare(#[from] ValidateError),
    /// A file (its file, place, what, fix), or a stream's scenario that does not load.
    #[error(transparent)]
    File(Box<ScenarioError>),
    /// A replay that stopped.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The cache model cannot be built.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The shared schedule gave back fewer outcomes than requests sent (a bug, not bad input).
    #[error("the schedule lost a request")]
    LostRequest,
    /// A what-if setting that failed (`under 1h, keepalive 4m30s: ...`).
    #[error("under {label}: {source}")]
    Under {
        /// The setting.
        label: String,
        /// Why.
        source: Box<AccountError>,
    },
    /// A `--what-if-ttl` that is no TTL.
    #[error("unknown TTL `{0}`; Anthropic offers 5m and 1h, e.g. --what-if-ttl 5m,1h")]
    Ttl(String),
    /// A `--what-if-keepalive` that is no interval.
    #[error("--what-if-keepalive: {0}; e.g. --what-if-keepalive off,4m30s")]
    Keepalive(#[from] crate::scenario::KeepaliveError),
    /// A synthetic account with no source transcript.
    #[error("no source transcript given")]
    NoSource,
    /// A file could not be written.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A CSV report could not be written.
    #[error("cannot write CSV: {0}")]
    Csv(String),
}

impl From<ScenarioError> for AccountError {
    fn from(e: ScenarioError) -> Self {
        AccountError::File(Box::new(e))
    }
}
