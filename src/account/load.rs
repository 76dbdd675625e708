//! Reading one discovered session into a [`Transcript`]: the main file and its subagent files
//! become one transcript whose streams share the session's cache, as `validate` replays them.

use crate::import::discover::{SessionFiles, TranscriptKind};
use crate::import::{Harness, StreamKind, Transcript};

/// A session read from disk, with what the account timeline needs to place it.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub files: SessionFiles,
    pub transcript: Transcript,
    /// Bytes read (main + subagents).
    pub bytes: u64,
}

impl LoadedSession {
    /// Send time (epoch ms) of every recorded request, any stream.
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

fn harness(kind: TranscriptKind) -> Harness {
    match kind {
        TranscriptKind::ClaudeCode => Harness::ClaudeCode,
        TranscriptKind::Codex => Harness::Codex,
    }
}

/// Reads the session's files. Subagent files add their streams after the main file's, renamed
/// `agent-N` in file order so names stay unique.
pub fn load(files: &SessionFiles) -> Result<LoadedSession, String> {
    let h = harness(files.kind);
    let mut bytes = 0u64;
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut transcript = match &files.main {
        Some(p) => {
            bytes += size(p);
            h.read(p)?
        }
        None => Transcript {
            source: files.session_id.clone(),
            name: files.session_id.clone(),
            ..Transcript::default()
        },
    };
    let mut agents = transcript
        .streams
        .iter()
        .filter(|s| s.kind == StreamKind::Agent)
        .count();
    for p in &files.subagents {
        bytes += size(p);
        let sub = h.read(p)?;
        transcript.lines += sub.lines;
        transcript
            .skipped
            .extend(sub.skipped.into_iter().map(|mut s| {
                s.reason = format!("{}: {}", p.display(), s.reason);
                s
            }));
        for mut s in sub.streams {
            agents += 1;
            s.name = format!("agent-{agents}");
            s.kind = StreamKind::Agent;
            transcript.streams.push(s);
        }
    }
    Ok(LoadedSession {
        files: files.clone(),
        transcript,
        bytes,
    })
}
