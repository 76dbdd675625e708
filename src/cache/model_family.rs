//! Model families: which known model prices an id the price table does not list.
//!
//! A *family* is a provider prefix, a tier and a major version: `claude-opus-4-9` is in the
//! family `claude-opus-4.x` at version 4.9, `gpt-5.3-codex-mini` in `gpt-5.x-codex-mini` at
//! 5.3, `claude-3-5-haiku` in `claude-haiku-3.x` at 3.5 (Anthropic's older naming puts the tier
//! last). The *nearest* known model of the family is the one with the highest version at or
//! below the id's version, else the lowest one above it. Ids whose version is not a plain
//! `MAJOR[.MINOR]` (`gpt-4o`, `o3`) or that carry another tier (`gpt-5-turbo` has no
//! `gpt-5.x-turbo` relative) have no family and are never guessed. A different major version
//! is a different family (prices moved between majors: Opus 4.1 cost three times Opus 4.5).
//! docs/pricing.md states the same rule.

/// A model id split into its family and its version within the family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Provider prefix, tier and major version, e.g. `claude-opus-4.x` or `gpt-5.x-codex-mini`.
    pub family: String,
    /// (major, minor) version; a missing minor is 0 (`gpt-5` is 5.0).
    pub version: (u32, u32),
}

/// A short run of digits: a version part, not a release date (`20250929`).
fn small_number(s: &str) -> Option<u32> {
    (!s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `5`, `5.3`, `v4` as (major, minor).
fn dotted(s: &str) -> Option<(u32, u32)> {
    let s = s.strip_prefix('v').unwrap_or(s);
    match s.split_once('.') {
        Some((a, b)) => Some((small_number(a)?, small_number(b)?)),
        None => Some((small_number(s)?, 0)),
    }
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase())
}

/// Anthropic ids: `claude-TIER-MAJOR[-MINOR][-VARIANT]` or `claude-MAJOR[-MINOR]-TIER`.
fn claude(parts: &[&str]) -> Option<Member> {
    let numbers = |from: usize| -> (Option<u32>, Option<u32>) {
        let major = parts.get(from).and_then(|p| small_number(p));
        let minor = major.and(parts.get(from + 1).and_then(|p| small_number(p)));
        (major, minor)
    };
    if is_word(parts.first()?) {
        let tier = parts[0];
        let (major, minor) = numbers(1);
        let major = major?;
        let rest = &parts[1 + 1 + usize::from(minor.is_some())..];
        let variant: String = rest.iter().map(|p| format!("-{p}")).collect();
        return Some(Member {
            family: format!("claude-{tier}-{major}.x{variant}"),
            version: (major, minor.unwrap_or(0)),
        });
    }
    let (major, minor) = numbers(0);
    let major = major?;
    let rest = &parts[1 + usize::from(minor.is_some())..];
    let (tier, variant) = rest.split_first()?;
    if !is_word(tier) {
        return None;
    }
    let variant: String = variant.iter().map(|p| format!("-{p}")).collect();
    Some(Member {
        family: format!("claude-{tier}-{major}.x{variant}"),
        version: (major, minor.unwrap_or(0)),
    })
}

/// The family and version of a model id, when it has one (see the module documentation).
pub fn member(id: &str) -> Option<Member> {
    let parts: Vec<&str> = id.split('-').collect();
    let (line, rest) = parts.split_first()?;
    if !is_word(line) {
        return None;
    }
    if *line == "claude" {
        return claude(rest);
    }
    let (version, tier) = rest.split_first()?;
    let (major, minor) = dotted(version)?;
    if tier.iter().any(|t| t.is_empty()) {
        return None;
    }
    let tier: String = tier.iter().map(|p| format!("-{p}")).collect();
    Some(Member {
        family: format!("{line}-{major}.x{tier}"),
        version: (major, minor),
    })
}

/// The nearest of `known` to `id` in its family: the highest version at or below `id`'s, else
/// the lowest above it; None when `id` has no family or no known model shares it.
pub fn nearest<'a>(id: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let want = member(id)?;
    let kin: Vec<((u32, u32), &str)> = known
        .into_iter()
        .filter_map(|k| {
            member(k)
                .filter(|m| m.family == want.family)
                .map(|m| (m.version, k))
        })
        .collect();
    let below = kin
        .iter()
        .filter(|(v, _)| *v <= want.version)
        .max_by_key(|(v, _)| *v);
    let above = kin
        .iter()
        .filter(|(v, _)| *v > want.version)
        .min_by_key(|(v, _)| *v);
    below.or(above).map(|(_, k)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_of_hand_chosen_ids() {
        let m = |id: &str| member(id).map(|m| (m.family, m.version));
        assert_eq!(
            m("claude-opus-4-9"),
            Some(("claude-opus-4.x".into(), (4, 9)))
        );
        assert_eq!(m("claude-opus-4"), Some(("claude-opus-4.x".into(), (4, 0))));
        assert_eq!(
            m("claude-3-5-haiku"),
            Some(("claude-haiku-3.x".into(), (3, 5)))
        );
        assert_eq!(
            m("gpt-5.3-codex-mini"),
            Some(("gpt-5.x-codex-mini".into(), (5, 3)))
        );
        assert_eq!(m("gpt-5-mini"), Some(("gpt-5.x-mini".into(), (5, 0))));
        assert_eq!(m("gpt-5.4"), Some(("gpt-5.x".into(), (5, 4))));
        assert_eq!(
            m("gemini-3-pro-preview"),
            Some(("gemini-3.x-pro-preview".into(), (3, 0)))
        );
        assert_eq!(
            m("deepseek-v4-pro"),
            Some(("deepseek-4.x-pro".into(), (4, 0)))
        );
        // No plain version: never guessed.
        assert_eq!(m("gpt-4o"), None);
        assert_eq!(m("o3"), None);
        assert_eq!(m("deepseek-chat"), None);
        assert_eq!(m("my-model"), None);
    }

    #[test]
    fn nearest_below_else_above_within_one_major() {
        let known = [
            "claude-opus-4",
            "claude-opus-4-1",
            "claude-opus-4-6",
            "claude-opus-4-8",
            "claude-haiku-4-5",
            "gpt-5-codex",
            "gpt-5.3-codex",
            "gpt-5.1-codex-mini",
        ];
        let near = |id: &str| nearest(id, known.iter().copied());
        assert_eq!(near("claude-opus-4-9"), Some("claude-opus-4-8"));
        // 4.7 lies between 4.6 and 4.8: the one below wins.
        assert_eq!(near("claude-opus-4-7"), Some("claude-opus-4-6"));
        // Nothing below 4.1 in haiku: the one above.
        assert_eq!(near("claude-haiku-4-1"), Some("claude-haiku-4-5"));
        assert_eq!(near("gpt-5.2-codex"), Some("gpt-5-codex"));
        assert_eq!(near("gpt-5.4-codex"), Some("gpt-5.3-codex"));
        assert_eq!(near("gpt-5.3-codex-mini"), Some("gpt-5.1-codex-mini"));
        // Another major or another tier is another family.
        assert_eq!(near("claude-opus-5"), None);
        assert_eq!(near("claude-sonnet-4-5"), None);
        assert_eq!(near("gpt-5-turbo"), None);
    }
}
