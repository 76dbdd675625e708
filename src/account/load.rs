//! Reading one discovered session into a [`Transcript`]: the main file and its subagent files
//! become one transcript whose streams share the session's cache, as `validate` replays them.

use crate::import::discover::{read_session, SessionFiles};
use crate::import::Transcript;

/// A session read from disk, with what the account timeline needs to place it.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// Its files (a Codex session's project set from its working folder).
    pub files: SessionFiles,
    /// Every file of the session read into one transcript.
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
/// A Codex session's project is its working folder ([`codex_project`]), not its date folder.
pub fn load(files: &SessionFiles) -> Result<LoadedSession, super::AccountError> {
    let bytes = files
        .files()
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let mut files = files.clone();
    if files.kind == crate::import::Harness::Codex {
        if let Some(p) = files.main.as_deref().and_then(codex_project) {
            files.project = p;
        }
    }
    Ok(LoadedSession {
        transcript: read_session(&files)?,
        files,
        bytes,
    })
}

/// A Codex session's project: the working folder its `session_meta` (or first `turn_context`)
/// record names, spelled the way Claude Code names its project folders (every character other
/// than a letter, digit or `-` becomes `-`: `/home/u/repo` is `-home-u-repo`), so the same
/// repository used from both harnesses is one project. `None` when the first records name none.
pub fn codex_project(path: &std::path::Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let f = std::fs::File::open(path).ok()?;
    let mut reader = std::io::BufReader::new(f);
    for _ in 0..20 {
        let mut line = Vec::new();
        // A bounded read: a huge first record is not read whole to find the folder.
        let n = reader
            .by_ref()
            .take(1 << 20)
            .read_until(b'\n', &mut line)
            .ok()?;
        if n == 0 {
            break;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        let kind = v.get("type").and_then(serde_json::Value::as_str);
        if let (Some("session_meta" | "turn_context"), Some(cwd)) = (
            kind,
            v.pointer("/payload/cwd")
                .and_then(serde_json::Value::as_str),
        ) {
            return Some(project_label(cwd));
        }
    }
    None
}

/// A working folder as Claude Code names its project folder.
pub fn project_label(cwd: &str) -> String {
    cwd.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The session's billed requests only (`--billed-only`): Claude Code files through the
/// streaming usage reader ([`super::usage`]), subagent files as streams named after their file
/// (as [`read_session`] names them); Codex rollouts through the streaming rollout reader
/// ([`super::usage::read_codex`]).
pub fn load_billed(files: &SessionFiles) -> Result<LoadedSession, super::AccountError> {
    let bytes = files
        .files()
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    if files.kind == crate::import::Harness::Codex {
        let mut files = files.clone();
        let mut t = match files.main.as_deref() {
            Some(m) => {
                if let Some(p) = codex_project(m) {
                    files.project = p;
                }
                super::usage::read_codex(m)?
            }
            None => Transcript::default(),
        };
        t.name = files.session_id.clone();
        return Ok(LoadedSession {
            files,
            transcript: t,
            bytes,
        });
    }
    let mut t = match &files.main {
        Some(m) => super::usage::read(m)?,
        None => Transcript::default(),
    };
    t.name = files.session_id.clone();
    for path in &files.subagents {
        let sub = super::usage::read(path)?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("agent")
            .to_string();
        let n = sub.streams.len();
        t.lines += sub.lines;
        for (i, mut s) in sub.streams.into_iter().enumerate() {
            s.kind = crate::import::StreamKind::Agent;
            s.name = if n == 1 {
                stem.clone()
            } else {
                format!("{stem}-{}", i + 1)
            };
            t.streams.push(s);
        }
    }
    Ok(LoadedSession {
        files: files.clone(),
        transcript: t,
        bytes,
    })
}
