//! Reading one discovered session into a [`Transcript`]: the main file and its subagent files
//! become one transcript whose streams share the session's cache, as `validate` replays them.

use crate::import::discover::{read_session, SessionFiles};
use crate::import::Transcript;

/// A session read from disk, with what the account timeline needs to place it.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub files: SessionFiles,
    pub transcript: Transcript,
    /// Bytes read (main + subagents).
    pub bytes: u64,
}

impl LoadedSession {
    /// Time (epoch ms) of every recorded request, any stream, ascending.
    pub fn request_times(&self) -> Vec<u64> {
        let mut t: Vec<u64> = self
            .transcript
            .streams
            .iter()
            .flat_map(|s| s.requests().map(|r| r.first_at_ms))
            .collect();
        t.sort_unstable();
        t
    }
}

/// Reads the session's files ([`read_session`]).
pub fn load(files: &SessionFiles) -> Result<LoadedSession, String> {
    let bytes = files
        .files()
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    Ok(LoadedSession {
        files: files.clone(),
        transcript: read_session(files)?,
        bytes,
    })
}
