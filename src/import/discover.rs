//! Finding the files of each session on disk.
//!
//! An account's cache is shared by a session's main transcript and its subagents, so validation
//! and account reports work per *session*, not per file. Layouts recognised:
//! - Claude Code: `~/.claude/projects/<project>/<session>.jsonl` (main thread, 1.0.x also holds
//!   subagents inline as `isSidechain` records) and
//!   `~/.claude/projects/<project>/<session>/subagents/agent-<id>.jsonl` (2.1.x subagents);
//! - Codex CLI: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, one file per session.
//!
//! The kind of a file is told by its content (the first records' shape), falling back to its
//! name, so renamed copies (test fixtures, attachments to bug reports) are still recognised.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::{ImportError, StreamKind, Transcript};
use crate::util::ScenarioError;

/// Which harness wrote a transcript (the import module's [`super::Harness`]).
pub use super::Harness as TranscriptKind;

/// The files of one session: the main transcript and its subagent transcripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFiles {
    /// The harness that wrote it.
    pub kind: TranscriptKind,
    /// The session id (Claude Code: the main file's stem; Codex: the rollout's stem).
    pub session_id: String,
    /// The project it belongs to (Claude Code: the project folder's name; Codex: the date folder
    /// `YYYY/MM/DD` when laid out as Codex does, else the parent folder's name).
    pub project: String,
    /// The main transcript; `None` when only subagent files were found or given.
    pub main: Option<PathBuf>,
    /// Subagent transcripts, sorted by path.
    pub subagents: Vec<PathBuf>,
}

impl SessionFiles {
    /// Every file of the session: the main one first, then the subagents.
    pub fn files(&self) -> Vec<&Path> {
        self.main
            .iter()
            .chain(&self.subagents)
            .map(PathBuf::as_path)
            .collect()
    }

    /// A short label for messages and reports (`project/session`).
    pub fn label(&self) -> String {
        if self.project.is_empty() {
            self.session_id.clone()
        } else {
            format!("{}/{}", self.project, self.session_id)
        }
    }
}

/// Folders deeper than this below the root are not searched (a projects folder is 3 levels deep
/// down to subagent files; Codex's dated folders are 4).
const MAX_DEPTH: usize = 6;

/// A file, a session folder, a project folder or a projects folder (Claude Code
/// `~/.claude/projects/<project>/<session>.jsonl` + `<session>/subagents/agent-*.jsonl`;
/// Codex ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl). Deterministic order. Strict: an entry
/// that cannot be read is an error; [`discover_readable`] lists it and goes on.
pub fn discover(root: &Path) -> Result<Vec<SessionFiles>, ImportError> {
    let found = discover_readable(root)?;
    match found.not_read.first() {
        Some(bad) => Err(ImportError::NotRead(bad.clone())),
        None => Ok(found.sessions),
    }
}

/// An entry of a searched folder that was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRead {
    /// The entry, as found under the folder given.
    pub path: PathBuf,
    /// Why it was not read (`a FIFO, not a regular file`, `a symbolic link loop`, ...).
    pub reason: String,
}

impl std::fmt::Display for NotRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// What a folder search found: the sessions whose files can be read, and the entries that
/// cannot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The sessions, grouped as [`group`] does, from the readable files only.
    pub sessions: Vec<SessionFiles>,
    /// Transcript entries (`*.jsonl`) and folders that could not be read, in path order.
    pub not_read: Vec<NotRead>,
}

/// The "not read" list as `account` and `validate` print it on standard error.
pub fn not_read_text(not_read: &[NotRead]) -> String {
    let mut out = format!(
        "not read ({} entr{}; the rest was read):",
        not_read.len(),
        if not_read.len() == 1 { "y" } else { "ies" }
    );
    for n in not_read {
        out.push_str(&format!("\n  {n}"));
    }
    out
}

/// [`discover`], going on past entries that are not readable regular files: a FIFO, a socket,
/// a device, an unreadable file or folder, a symbolic link loop, a dangling link or a link to a
/// folder named `*.jsonl` is listed in [`Found::not_read`] with its reason and the rest is read.
/// Only a root that cannot be read, or a folder where nothing at all can be read, is an error.
pub fn discover_readable(root: &Path) -> Result<Found, ImportError> {
    let meta = std::fs::metadata(root).map_err(|e| {
        ScenarioError::new(root, None, format!("cannot read: {e}"))
            .with_hint("give a transcript file or a folder of transcripts")
    })?;
    if meta.is_file() {
        return Ok(Found {
            sessions: group(&[root.to_path_buf()])?,
            not_read: Vec::new(),
        });
    }
    let mut files = Vec::new();
    let mut not_read = Vec::new();
    std::fs::read_dir(root)
        .map_err(|e| ScenarioError::new(root, None, format!("cannot list the folder: {e}")))?;
    walk(root, 0, &mut files, &mut not_read);
    // A session folder (`<project>/<session>/`, holding `subagents/`) belongs with its main file
    // `<project>/<session>.jsonl` beside it.
    if let Some(main) = main_beside_session_folder(root) {
        if !files.contains(&main) {
            files.push(main);
        }
    }
    if files.is_empty() {
        return Err(ImportError::NothingReadable {
            root: root.to_path_buf(),
            not_read,
        });
    }
    files.sort();
    Ok(Found {
        sessions: group(&files)?,
        not_read,
    })
}

/// Why the transcript entry `p` (a `*.jsonl` name) cannot be read as a regular file, if so.
fn unreadable(p: &Path, link: bool) -> Option<String> {
    let meta = match std::fs::metadata(p) {
        Ok(m) => m,
        // ELOOP: the link resolves to itself.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Some("a symbolic link loop".into())
        }
        Err(e) if link && e.kind() == std::io::ErrorKind::NotFound => {
            let to = std::fs::read_link(p).map(|t| t.display().to_string());
            return Some(format!(
                "a dangling symbolic link (to {})",
                to.unwrap_or_else(|_| "?".into())
            ));
        }
        Err(e) => return Some(format!("cannot read: {e}")),
    };
    let kind = special_kind(&meta.file_type());
    if meta.is_dir() {
        return Some("a symbolic link to a folder (not followed)".into());
    }
    if let Some(kind) = kind {
        return Some(format!("{kind}, not a regular file"));
    }
    // Opening a regular file never blocks; reading its first bytes tells a permission or I/O
    // failure before the session is grouped.
    match std::fs::File::open(p).and_then(|mut f| f.read(&mut [0u8; 1])) {
        Ok(_) => None,
        Err(e) => Some(format!("cannot read: {e}")),
    }
}

/// The kind of a file that is neither a regular file nor a folder.
fn special_kind(t: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, not_read: &mut Vec<NotRead>) {
    if depth > MAX_DEPTH {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            not_read.push(NotRead {
                path: dir.to_path_buf(),
                reason: format!("cannot list the folder: {e}"),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        // Symbolic links to folders are not followed (no cycles); files are.
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            walk(&p, depth + 1, out, not_read);
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            match unreadable(&p, meta.file_type().is_symlink()) {
                None => out.push(p),
                Some(reason) => not_read.push(NotRead { path: p, reason }),
            }
        }
    }
}

fn main_beside_session_folder(dir: &Path) -> Option<PathBuf> {
    let name = dir.file_name()?.to_str()?;
    if !dir.join("subagents").is_dir() {
        return None;
    }
    let main = dir.parent()?.join(format!("{name}.jsonl"));
    main.is_file().then_some(main)
}

/// Where a Claude Code subagent file's session is: `<project>/<session>/subagents/agent-*.jsonl`
/// gives (`<project>` folder, session id).
fn subagent_session(path: &Path) -> Option<(PathBuf, String)> {
    let name = path.file_name()?.to_str()?;
    if !name.starts_with("agent-") {
        return None;
    }
    let subagents = path.parent()?;
    if subagents.file_name()? != "subagents" {
        return None;
    }
    let session_dir = subagents.parent()?;
    let session = session_dir.file_name()?.to_str()?.to_string();
    Some((session_dir.parent()?.to_path_buf(), session))
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string()
}

fn stem_of(p: &Path) -> String {
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string()
}

/// The kind of a transcript from its first records: Codex rollouts are `{type, payload}`
/// envelopes (`session_meta`, `turn_context`, `response_item`, `event_msg`); anything else is
/// read as Claude Code. A file that cannot be opened is an error naming it.
pub fn sniff_kind(path: &Path) -> Result<TranscriptKind, ImportError> {
    if name_of(path).starts_with("rollout-") {
        return Ok(TranscriptKind::Codex);
    }
    let f = std::fs::File::open(path).map_err(|e| {
        ScenarioError::new(path, None, format!("cannot read transcript: {e}"))
            .with_hint("check the path")
    })?;
    // Only the first few lines, each read up to a bounded length: a huge first line must not be
    // read whole just to tell the kind.
    let mut reader = BufReader::new(f);
    for _ in 0..20 {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take(64 * 1024)
            .read_until(b'\n', &mut line)
            .map_err(|e| ScenarioError::new(path, None, format!("cannot read transcript: {e}")))?;
        if n == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let Ok(v) = serde_json::from_str::<serde_json::Value>(text.trim()) else {
            continue;
        };
        if v.get("payload").is_some() {
            if let Some(
                "session_meta" | "turn_context" | "response_item" | "event_msg" | "compacted",
            ) = v.get("type").and_then(serde_json::Value::as_str)
            {
                return Ok(TranscriptKind::Codex);
            }
        }
        if v.get("type").is_some() {
            return Ok(TranscriptKind::ClaudeCode);
        }
    }
    Ok(TranscriptKind::ClaudeCode)
}

/// Groups an explicit list of files into sessions (a subagent file joins its main file).
pub fn group(files: &[PathBuf]) -> Result<Vec<SessionFiles>, ImportError> {
    // Key: (project folder, session id, kind rank) so the order is deterministic.
    let mut sessions: BTreeMap<(PathBuf, String, u8), SessionFiles> = BTreeMap::new();
    for f in files {
        if !f.is_file() {
            return Err(ScenarioError::new(f, None, "not a file")
                .with_hint("give transcript files (*.jsonl) or use a folder")
                .into());
        }
        let kind = sniff_kind(f)?;
        let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
        let (project_dir, session_id, is_agent) = match (kind, subagent_session(f)) {
            (TranscriptKind::ClaudeCode, Some((project_dir, session))) => {
                (project_dir, session, true)
            }
            (TranscriptKind::ClaudeCode, None) => match sibling_agent_session(f) {
                Some(session) => (dir, session, true),
                None => (dir, stem_of(f), false),
            },
            _ => (dir, stem_of(f), false),
        };
        let project = match kind {
            TranscriptKind::Codex => codex_project(&project_dir),
            TranscriptKind::ClaudeCode => name_of(&project_dir),
        };
        let rank = match kind {
            TranscriptKind::ClaudeCode => 0,
            TranscriptKind::Codex => 1,
        };
        let entry = sessions
            .entry((project_dir, session_id.clone(), rank))
            .or_insert_with(|| SessionFiles {
                kind,
                session_id,
                project,
                main: None,
                subagents: Vec::new(),
            });
        if is_agent {
            if !entry.subagents.contains(f) {
                entry.subagents.push(f.clone());
            }
        } else {
            match &entry.main {
                Some(m) if m != f => {
                    return Err(ImportError::TwoMains {
                        first: m.clone(),
                        second: f.clone(),
                        session: entry.session_id.clone(),
                    })
                }
                _ => entry.main = Some(f.clone()),
            }
        }
    }
    let mut out: Vec<SessionFiles> = sessions.into_values().collect();
    attach_subagents(&mut out)?;
    Ok(out)
}

/// A main Claude Code file brings its subagent files along (`<session>/subagents/agent-*.jsonl`,
/// and 2.0.x `agent-*.jsonl` beside it naming its session): they ran against the same account
/// cache, so they belong in its replay.
fn attach_subagents(out: &mut [SessionFiles]) -> Result<(), ImportError> {
    // Each folder's 2.0.x agent files, listed and read once (not once per session in it).
    let mut agents_by_dir: HashMap<PathBuf, Vec<(PathBuf, String)>> = HashMap::new();
    for s in out.iter_mut() {
        // A main Claude Code file brings its subagent files (`<session>/subagents/agent-*.jsonl`)
        // along: they ran against the same account cache, so they belong in its replay.
        if let (TranscriptKind::ClaudeCode, Some(main)) = (s.kind, &s.main) {
            let dir = main.parent().map(Path::to_path_buf).unwrap_or_default();
            let agents = agents_by_dir
                .entry(dir)
                .or_insert_with_key(|dir| sibling_agents_in(dir));
            let siblings = agents
                .iter()
                .filter(|(_, session)| *session == s.session_id)
                .map(|(f, _)| f.clone());
            for f in subagent_files_of(main)?.into_iter().chain(siblings) {
                if !s.subagents.contains(&f) {
                    s.subagents.push(f);
                }
            }
        }
        s.subagents.sort();
    }
    Ok(())
}

/// Claude Code 2.0.x writes a subagent as `<project>/agent-<id>.jsonl` beside the main file,
/// tied to its session by the `sessionId` its records carry (2.1.x uses
/// `<session>/subagents/`): the session id of such a file, read from its first records.
fn sibling_agent_session(path: &Path) -> Option<String> {
    use std::io::BufRead;
    if !name_of(path).starts_with("agent-") || subagent_session(path).is_some() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    std::io::BufReader::new(file)
        .lines()
        .take(20)
        .map_while(Result::ok)
        .find_map(|line| {
            let v: serde_json::Value = serde_json::from_str(&line).ok()?;
            v.get("sessionId")?.as_str().map(str::to_string)
        })
}

/// The 2.0.x subagent files (`agent-*.jsonl`) of a project folder with the session each names,
/// sorted by path.
fn sibling_agents_in(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(PathBuf, String)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        // The name first: a folder holds many sessions, few of them agent files.
        .filter(|p| name_of(p).starts_with("agent-") && p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| p.is_file())
        .filter_map(|p| sibling_agent_session(&p).map(|session| (p, session)))
        .collect();
    files.sort();
    files
}

/// The subagent files beside a main Claude Code transcript `<session>.jsonl`:
/// `<session>/subagents/agent-*.jsonl`, sorted (none when the folder does not exist).
fn subagent_files_of(main: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let dir = main.with_extension("").join("subagents");
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| ScenarioError::new(&dir, None, format!("cannot list the folder: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|e| e == "jsonl")
                && name_of(p).starts_with("agent-")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Codex keeps rollouts in `sessions/YYYY/MM/DD/`: the date is the most telling project label
/// the path holds (the working folder is inside the file).
fn codex_project(dir: &Path) -> String {
    let parts: Vec<String> = dir
        .components()
        .rev()
        .take(3)
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let dated = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if dated {
        format!("{}/{}/{}", parts[2], parts[1], parts[0])
    } else {
        name_of(dir)
    }
}

/// Reads every file of a session into one [`Transcript`]: the main file's streams first (with
/// any inline sidechains), then one stream per subagent file, named after the file
/// (`agent-<id>`). The transcript is named after the session.
pub fn read_session(files: &SessionFiles) -> Result<Transcript, ImportError> {
    let mut t = match &files.main {
        Some(m) => files.kind.read(m)?,
        None => Transcript::default(),
    };
    t.name = files.session_id.clone();
    t.source = match &files.main {
        Some(m) => m.display().to_string(),
        None => files
            .subagents
            .first()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    };
    for path in &files.subagents {
        let sub = files.kind.read(path)?;
        let stem = stem_of(path);
        let file = path.display().to_string();
        t.lines += sub.lines;
        // When each subagent request finished: its entries' TTL runs from there.
        t.finished_at_ms.extend(sub.finished_at_ms);
        t.skipped.extend(sub.skipped.into_iter().map(|mut s| {
            s.reason = format!("{file}: {}", s.reason);
            s
        }));
        let n = sub.streams.len();
        for (i, mut s) in sub.streams.into_iter().enumerate() {
            // A subagent file holds one agent's conversation: every stream in it is a subagent's.
            s.kind = StreamKind::Agent;
            s.name = if n == 1 {
                stem.clone()
            } else {
                format!("{stem}-{}", i + 1)
            };
            t.streams.push(s);
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagent_paths_name_their_session_and_project() {
        let p = Path::new("/h/.claude/projects/-repo/abc/subagents/agent-1.jsonl");
        assert_eq!(
            subagent_session(p),
            Some((PathBuf::from("/h/.claude/projects/-repo"), "abc".into()))
        );
        assert_eq!(subagent_session(Path::new("/x/abc/agent-1.jsonl")), None);
    }

    #[test]
    fn codex_date_folders_are_the_project_label() {
        assert_eq!(
            codex_project(Path::new("/h/.codex/sessions/2025/09/01")),
            "2025/09/01"
        );
        assert_eq!(codex_project(Path::new("/tmp/fixtures")), "fixtures");
    }
}
