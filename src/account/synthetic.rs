//! A synthetic account for tests, benchmarks and examples: copies of transcripts with their
//! timestamps shifted so that the copies follow one another on one timeline, spread over
//! projects as `~/.claude/projects` is (and Codex rollouts as `~/.codex/sessions` is).

use super::AccountError;
use crate::util::ScenarioError;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::import::parse_time_ms;

/// How to lay out the copies.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Number of session files to write.
    pub sessions: usize,
    /// Time between the starts of consecutive sessions.
    pub spacing: Duration,
    /// Start of the first session (epoch ms).
    pub start_ms: u64,
    /// Claude Code sessions are spread round-robin over this many project folders.
    pub projects: usize,
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// The Claude Code projects folder and, when a Codex rollout was among the sources, the
    /// Codex sessions folder.
    pub roots: Vec<PathBuf>,
    /// (path, source it was copied from, start time) of every file, in session order.
    pub files: Vec<(PathBuf, PathBuf, u64)>,
    /// Total size of the files written.
    pub bytes: u64,
}

/// Rewrites every `"timestamp": "<RFC 3339>"` value of `text` shifted by `shift_ms` (which may
/// be negative); everything else, including lines that are not JSON, is kept byte for byte.
pub fn shift_timestamps(text: &str, shift_ms: i64) -> String {
    const KEY: &str = "\"timestamp\"";
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(i) = rest.find(KEY) {
        let after_key = i + KEY.len();
        out.push_str(&rest[..after_key]);
        rest = &rest[after_key..];
        let value_at = rest
            .char_indices()
            .find(|&(_, c)| c != ':' && c != ' ')
            .map(|(j, _)| j);
        let Some(j) = value_at.filter(|&j| rest[j..].starts_with('"')) else {
            continue;
        };
        let Some(len) = rest[j + 1..].find('"') else {
            continue;
        };
        let value = &rest[j + 1..j + 1 + len];
        match parse_time_ms(value) {
            Some(ms) => {
                let shifted = (ms as i64 + shift_ms).max(0) as u64;
                let t = UNIX_EPOCH + Duration::from_millis(shifted);
                out.push_str(&rest[..j + 1]);
                out.push_str(&humantime::format_rfc3339_millis(t).to_string());
                out.push('"');
            }
            None => out.push_str(&rest[..j + 2 + len]),
        }
        rest = &rest[j + 2 + len..];
    }
    out.push_str(rest);
    out
}

/// The earliest timestamp of a transcript (epoch ms).
pub fn first_timestamp(text: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("timestamp")?.as_str().and_then(parse_time_ms))
        .min()
}

/// Writes `layout.sessions` copies of `sources` (round-robin) under `dir`: Claude Code
/// transcripts as `dir/projects/proj-P/<stem>-<k>.jsonl`, Codex rollouts (files whose first
/// record is `session_meta`) as `dir/codex/YYYY/MM/DD/rollout-<k>.jsonl`. Session `k` starts at
/// `start_ms + k × spacing`.
pub fn write_account(
    dir: &Path,
    sources: &[PathBuf],
    layout: &Layout,
) -> Result<Written, AccountError> {
    let texts = sources
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .map_err(|e| ScenarioError::new(p, None, format!("cannot read: {e}")))?;
            let first = first_timestamp(&text)
                .ok_or_else(|| ScenarioError::new(p, None, "no timestamp in the transcript"))?;
            let codex = text
                .lines()
                .next()
                .is_some_and(|l| l.contains("\"session_meta\""));
            Ok((p.clone(), text, first, codex))
        })
        .collect::<Result<Vec<_>, AccountError>>()?;
    if texts.is_empty() {
        return Err(AccountError::NoSource);
    }
    let projects = dir.join("projects");
    let codex_root = dir.join("codex");
    let mut out = Written {
        roots: vec![projects.clone()],
        ..Written::default()
    };
    for k in 0..layout.sessions {
        let (src, text, first, codex) = &texts[k % texts.len()];
        let start = layout.start_ms + k as u64 * layout.spacing.as_millis() as u64;
        let shifted = shift_timestamps(text, start as i64 - *first as i64);
        let stem = src
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("session");
        let path = if *codex {
            let day = super::figures::day_string(start).replace('-', "/");
            codex_root.join(day).join(format!("rollout-{k:05}.jsonl"))
        } else {
            projects
                .join(format!("proj-{}", k % layout.projects.max(1)))
                .join(format!("{stem}-{k:05}.jsonl"))
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ScenarioError::new(parent, None, format!("cannot create: {e}")))?;
        }
        crate::export::write_atomic(&path, shifted.as_bytes())?;
        out.bytes += shifted.len() as u64;
        out.files.push((path, src.clone(), start));
        if *codex && !out.roots.contains(&codex_root) {
            out.roots.push(codex_root.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_shift_and_everything_else_stays() {
        let text = "{\"type\": \"user\", \"timestamp\": \"2025-10-01T10:00:00.000Z\"}\nnot json \"timestamp\": 3\n{\"timestamp\":\"2025-10-01T23:59:30.500Z\",\"x\":1}\n";
        // +90 s: 10:01:30; the second value crosses midnight: 00:01:00.500 on Oct 2.
        let got = shift_timestamps(text, 90_000);
        assert_eq!(
            got,
            "{\"type\": \"user\", \"timestamp\": \"2025-10-01T10:01:30.000Z\"}\nnot json \"timestamp\": 3\n{\"timestamp\":\"2025-10-02T00:01:00.500Z\",\"x\":1}\n"
        );
        assert_eq!(
            first_timestamp(&got),
            parse_time_ms("2025-10-01T10:01:30.000Z")
        );
    }
}
