//! The errors of the writers: a file or output directory that could not be written, a signal
//! that stopped them, a format that could not be rendered.

use std::path::PathBuf;

use crate::signals::{InstallError, Interrupted};

/// What a writer's own step (rendering into the temporary file) failed with.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Why an output was not written (the earlier output is left as it was).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A signal arrived before the file was begun.
    #[error("{}: not written: {source}", path.display())]
    NotWritten {
        /// The output.
        path: PathBuf,
        /// The signal.
        source: Interrupted,
    },
    /// A signal stopped an output directory's transaction.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// The signal handlers could not be installed.
    #[error(transparent)]
    Signals(#[from] InstallError),
    /// An output path that cannot be written at all (a directory, a missing parent, ...).
    #[error(transparent)]
    Target(#[from] super::target::OutputPathError),
    /// The file (or its temporary) could not be written or moved into place.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// Why: the writer's error, the file system's, or a signal.
        source: Cause,
    },
    /// A file-system step on `path` failed (`cannot create directory`, `cannot list`, ...).
    #[error("{}: {action}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A file syncing to disk failed.
    #[error(transparent)]
    Sync(std::io::Error),
    /// An output directory's path is a file.
    #[error("{}: not a directory", path.display())]
    NotDir {
        /// The path.
        path: PathBuf,
    },
    /// A CSV could not be written.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// A CSV writer's buffer could not be taken back.
    #[error("{0}")]
    CsvBuffer(String),
    /// A JSON document could not be written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl ExportError {
    /// A file-system failure of `action` on `path`.
    pub fn io(path: &std::path::Path, action: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| ExportError::Io {
            path,
            action,
            source,
        }
    }
}
