//! Small helpers every layer uses, knowing nothing of plancache's concepts: file-name slugs,
//! `"3m"`-style durations, the did-you-mean suggestion for a mistyped name, the error of a bad
//! input file ([`ScenarioError`]), and how the allocator keeps freed memory ([`heap`]). The base
//! layer of docs/architecture.md: it imports no other module of the crate.

mod error;
pub mod heap;

pub use error::{line_col, snippet, ScenarioError};

/// Keeps letters, digits, `-`, `_` and `.`; everything else becomes `-`.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// `a`'s closest match among `candidates` as `; did you mean `x`?`, or nothing when none is
/// close (Jaro-Winkler similarity of at least 0.8, the threshold cargo uses for its hints is
/// edit distance; similarity copes better with long hyphenated ids).
pub fn did_you_mean<'a>(a: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(a, candidates)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// The candidate most similar to `a`, when similar enough to be a likely typo.
pub fn closest<'a>(a: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(a, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, c)| c)
}

/// `"3m"`-style durations (humantime syntax).
pub mod duration_str {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `d` in humantime syntax (`3m`).
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    /// Reads a humantime duration; the error shows examples of the syntax.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid duration `{text}` ({e}); write e.g. \"500ms\", \"30s\", \"3m\", \"1h30m\""
            ))
        })
    }
}

/// Optional `"3m"`-style durations.
pub mod opt_duration_str {
    use std::time::Duration;

    use serde::{Deserializer, Serializer};

    /// Writes `Some(d)` like [`super::duration_str`], `None` as none.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration_str::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    /// Reads a present duration as `Some`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::duration_str::deserialize(d).map(Some)
    }
}
