//! Finding sessions on disk: every transcript under a Claude Code projects folder
//! (`~/.claude/projects/<project>/<session>.jsonl`, subagents of 2.1.x in
//! `<session>/subagents/agent-*.jsonl`) or a Codex sessions folder
//! (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), grouped into sessions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which harness wrote a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TranscriptKind {
    ClaudeCode,
    Codex,
}

/// The files of one session: its main transcript and its subagents' transcripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFiles {
    pub kind: TranscriptKind,
    pub session_id: String,
    /// The project folder name (Claude Code) or `codex`.
    pub project: String,
    pub main: Option<PathBuf>,
    pub subagents: Vec<PathBuf>,
}

/// Every session under `root`, sorted by project then session id.
pub fn discover(root: &Path) -> Result<Vec<SessionFiles>, String> {
    if !root.is_dir() {
        return Err(format!(
            "{}: not a directory\n  hint: give a Claude Code projects folder (~/.claude/projects) or a Codex sessions folder (~/.codex/sessions)",
            root.display()
        ));
    }
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    group_under(Some(root), &files)
}

/// Groups transcript paths into sessions (a subagent file joins the session it lives under).
pub fn group(files: &[PathBuf]) -> Result<Vec<SessionFiles>, String> {
    group_under(None, files)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "{}: cannot list: {e}\n  hint: check permissions",
            dir.display()
        )
    })?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: cannot list: {e}", dir.display()))?;
        let path = entry.path();
        let ty = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if ty.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string()
}

fn name_of(p: Option<&Path>) -> String {
    p.and_then(|p| p.file_name())
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string()
}

fn group_under(root: Option<&Path>, files: &[PathBuf]) -> Result<Vec<SessionFiles>, String> {
    let mut sessions: BTreeMap<(String, String), SessionFiles> = BTreeMap::new();
    for f in files {
        let parent = f.parent();
        let is_subagent = name_of(parent) == "subagents";
        let kind = if stem(f).starts_with("rollout-") {
            TranscriptKind::Codex
        } else {
            TranscriptKind::ClaudeCode
        };
        let (session_dir, session_id) = if is_subagent {
            let dir = parent.and_then(Path::parent);
            (dir.and_then(Path::parent), name_of(dir))
        } else {
            (parent, stem(f))
        };
        let project = match kind {
            TranscriptKind::Codex => "codex".to_string(),
            TranscriptKind::ClaudeCode => match (root, session_dir) {
                (Some(r), Some(d)) => d
                    .strip_prefix(r)
                    .ok()
                    .and_then(|rel| rel.components().next())
                    .and_then(|c| c.as_os_str().to_str())
                    .map_or_else(|| name_of(Some(d)), str::to_string),
                (_, d) => name_of(d),
            },
        };
        let key = (project.clone(), session_id.clone());
        let entry = sessions.entry(key).or_insert_with(|| SessionFiles {
            kind,
            session_id,
            project,
            main: None,
            subagents: Vec::new(),
        });
        if is_subagent {
            entry.subagents.push(f.clone());
        } else {
            entry.main = Some(f.clone());
        }
    }
    let mut out: Vec<SessionFiles> = sessions.into_values().collect();
    for s in &mut out {
        s.subagents.sort();
    }
    Ok(out)
}
