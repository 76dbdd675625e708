//! Plan quality: does a plan say what it is for, how, and what could go wrong, and how long is it?
//!
//! Plan length drives the cost of the plan-approval turn, and a plan without steps or risks tends
//! to be revised (another round trip through the cache). This check is a cheap, deterministic
//! signal for `check` and the design-review report, not a grader.
//!
//! # Sections
//!
//! A line is inspected after stripping leading whitespace, Markdown markers (`#`, `*`, `_`, `>`,
//! `-`, `+`) and a list number (`1.`, `2)`); it names a section when it then starts with one of
//! the lead words below, followed by the end of the line or a non-letter (`Goal:`, `## Risks`,
//! `**Open questions**`, `1. Steps`).
//!
//! | Section | Lead words (case-insensitive) | Also present when |
//! |---------|-------------------------------|-------------------|
//! | goal | `goal`, `goals`, `objective`, `objectives`, `context`, `overview`, `purpose`, `problem`, `summary` | |
//! | steps | `steps`, `implementation`, `approach`, `plan`, `changes` | at least 2 numbered (`1.`, `1)`) or bulleted (`-`, `*`, `+`) lines |
//! | risks | `risk`, `risks`, `trade-offs`, `tradeoffs`, `trade offs`, `open questions`, `caveats`, `concerns` | |
//!
//! # Length
//!
//! Lengths are in characters (Unicode scalar values). A plan below [`MIN_CHARS`] or above
//! [`MAX_CHARS`] gets a warning. Its position against the published plan-length distribution
//! (p50 [`P50_CHARS`], p90 [`P90_CHARS`]) is a [`LengthBand`]: below p50 is `< 4,906`, p50 to
//! p90 is `4,906..=11,617`, above p90 is `> 11,617`.
//!
//! A plan known only as a token count is converted with [`CHARS_PER_TOKEN`] = 4 characters per
//! token, a rough estimate for English prose; its sections are reported as
//! [`SectionCheck::Unknown`].

use std::fmt;

use serde::Serialize;

/// Plans shorter than this many characters get a warning.
pub const MIN_CHARS: u64 = 500;
/// Plans longer than this many characters get a warning.
pub const MAX_CHARS: u64 = 15_000;
/// Median plan length in characters (published distribution).
pub const P50_CHARS: u64 = 4_906;
/// 90th-percentile plan length in characters (published distribution).
pub const P90_CHARS: u64 = 11_617;
/// Estimated characters per token, used when only a token count is known.
pub const CHARS_PER_TOKEN: u64 = 4;

const GOAL_WORDS: &[&str] = &[
    "goal",
    "goals",
    "objective",
    "objectives",
    "context",
    "overview",
    "purpose",
    "problem",
    "summary",
];
const STEP_WORDS: &[&str] = &["steps", "implementation", "approach", "plan", "changes"];
const RISK_WORDS: &[&str] = &[
    "risk",
    "risks",
    "trade-offs",
    "tradeoffs",
    "trade offs",
    "open questions",
    "caveats",
    "concerns",
];
/// List items needed for the steps section to count as present without a heading.
const MIN_LIST_ITEMS: usize = 2;

/// A plan to assess: its text, or only its size in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanInput<'a> {
    /// The plan text.
    Text(&'a str),
    /// Only the plan's token count is known.
    Tokens(u64),
}

/// Whether a section was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionCheck {
    /// Found.
    Present,
    /// Not found.
    Missing,
    /// Cannot tell: the plan text is not available.
    Unknown,
}

/// Where a plan's length falls against the published distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthBand {
    /// Shorter than the median ([`P50_CHARS`]).
    BelowP50,
    /// From the median to the 90th percentile, inclusive.
    P50ToP90,
    /// Longer than the 90th percentile ([`P90_CHARS`]).
    AboveP90,
}

impl LengthBand {
    /// The band of a plan of `chars` characters.
    pub fn of(chars: u64) -> Self {
        if chars < P50_CHARS {
            LengthBand::BelowP50
        } else if chars <= P90_CHARS {
            LengthBand::P50ToP90
        } else {
            LengthBand::AboveP90
        }
    }
}

impl fmt::Display for LengthBand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthBand::BelowP50 => write!(f, "below p50 ({P50_CHARS} chars)"),
            LengthBand::P50ToP90 => {
                write!(f, "between p50 ({P50_CHARS}) and p90 ({P90_CHARS} chars)")
            }
            LengthBand::AboveP90 => write!(f, "above p90 ({P90_CHARS} chars)"),
        }
    }
}

/// The result of assessing one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanReport {
    /// Plan length in characters (estimated when `estimated` is true).
    pub chars: u64,
    /// The length was estimated from a token count.
    pub estimated: bool,
    /// Position against the published distribution.
    pub band: LengthBand,
    /// Goal / objective / context section.
    pub goal: SectionCheck,
    /// Steps: a steps heading or a list.
    pub steps: SectionCheck,
    /// Risks / trade-offs / open questions.
    pub risks: SectionCheck,
}

/// Strips Markdown markers and a list number from the start of a line.
fn strip_markers(line: &str) -> &str {
    let line = line.trim_start_matches(|c: char| c.is_whitespace() || "#*_>-+".contains(c));
    let digits = line.trim_start_matches(|c: char| c.is_ascii_digit());
    let line = if digits.len() < line.len() {
        digits
            .strip_prefix('.')
            .or_else(|| digits.strip_prefix(')'))
            .unwrap_or(line)
    } else {
        line
    };
    line.trim_start_matches(|c: char| c.is_whitespace() || "*_".contains(c))
}

/// Whether `line` starts with one of `words` followed by the end or a non-letter.
fn leads_with(line: &str, words: &[&str]) -> bool {
    let lower = strip_markers(line).to_lowercase();
    words.iter().any(|w| {
        lower
            .strip_prefix(w)
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphabetic()))
    })
}

/// A numbered (`1.`, `1)`) or bulleted (`-`, `*`, `+`) list line.
fn is_list_item(line: &str) -> bool {
    let t = line.trim_start();
    if let Some(rest) = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("+ "))
    {
        return !rest.trim().is_empty();
    }
    let rest = t.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.len() < t.len()
        && (rest.starts_with(". ") || rest.starts_with(") "))
        && !rest[2..].trim().is_empty()
}

fn check(found: bool) -> SectionCheck {
    if found {
        SectionCheck::Present
    } else {
        SectionCheck::Missing
    }
}

/// Assesses a plan given as text or as a token count.
pub fn assess(input: PlanInput<'_>) -> PlanReport {
    match input {
        PlanInput::Text(text) => {
            let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
            let lines = || text.lines();
            let steps = lines().any(|l| leads_with(l, STEP_WORDS))
                || lines().filter(|l| is_list_item(l)).count() >= MIN_LIST_ITEMS;
            PlanReport {
                chars,
                estimated: false,
                band: LengthBand::of(chars),
                goal: check(lines().any(|l| leads_with(l, GOAL_WORDS))),
                steps: check(steps),
                risks: check(lines().any(|l| leads_with(l, RISK_WORDS))),
            }
        }
        PlanInput::Tokens(tokens) => {
            let chars = tokens.saturating_mul(CHARS_PER_TOKEN);
            PlanReport {
                chars,
                estimated: true,
                band: LengthBand::of(chars),
                goal: SectionCheck::Unknown,
                steps: SectionCheck::Unknown,
                risks: SectionCheck::Unknown,
            }
        }
    }
}

impl PlanReport {
    /// One line on the plan's length and its place in the distribution.
    pub fn length_summary(&self) -> String {
        let approx = if self.estimated {
            format!(
                "~{} chars (estimated at {CHARS_PER_TOKEN} chars/token)",
                self.chars
            )
        } else {
            format!("{} chars", self.chars)
        };
        format!("{approx}, {}", self.band)
    }

    /// Human-readable warnings, in a fixed order; empty for a plan that passes every check.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let est = if self.estimated { " (estimated)" } else { "" };
        if self.chars < MIN_CHARS {
            out.push(format!(
                "plan is short: {} chars{est}, below {MIN_CHARS}",
                self.chars
            ));
        }
        if self.chars > MAX_CHARS {
            out.push(format!(
                "plan is long: {} chars{est}, above {MAX_CHARS}",
                self.chars
            ));
        }
        let sections = [
            ("a goal (Goal/Objective/Context)", self.goal),
            ("steps (a Steps heading or a list)", self.steps),
            ("risks (Risks/Trade-offs/Open questions)", self.risks),
        ];
        for (what, state) in sections {
            if state == SectionCheck::Missing {
                out.push(format!("plan does not name {what}"));
            }
        }
        if sections.iter().any(|(_, s)| *s == SectionCheck::Unknown) {
            out.push("plan sections unknown: only a token count was given".to_string());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GOOD: &str = "\
## Goal
Add JWT authentication to the login flow.

## Steps
1. Add a token module.
2. Issue tokens on login.
3. Verify tokens in middleware.

## Risks
- Clock skew breaks expiry checks.
";

    fn padded(text: &str, total: usize) -> String {
        let mut s = text.to_string();
        while s.chars().count() < total {
            s.push_str("filler text. ");
        }
        s.chars().take(total).collect()
    }

    #[test]
    fn complete_plan_has_all_sections() {
        let plan = padded(GOOD, 5_000);
        let r = assess(PlanInput::Text(&plan));
        assert_eq!(r.goal, SectionCheck::Present);
        assert_eq!(r.steps, SectionCheck::Present);
        assert_eq!(r.risks, SectionCheck::Present);
        assert_eq!(r.chars, 5_000);
        assert!(!r.estimated);
        assert_eq!(r.band, LengthBand::P50ToP90);
        assert_eq!(r.warnings(), Vec::<String>::new());
    }

    #[test]
    fn lead_word_variants() {
        for (text, goal, steps, risks) in [
            ("Objective: x", true, false, false),
            ("**Context** we need y", true, false, false),
            ("# Implementation\nTrade-offs: slower", false, true, true),
            ("1. Steps\n2) Open questions", false, true, true),
            ("> Caveats: none", false, false, true),
            ("Goalkeeper\nRiskless\nStepson", false, false, false),
            ("the goal is hidden mid-line", false, false, false),
            ("- one\n- two", false, true, false),
            ("1. one\n\n2) two", false, true, false),
            ("- one only", false, false, false),
            ("-\n- \n1.", false, false, false),
        ] {
            let r = assess(PlanInput::Text(text));
            assert_eq!(r.goal == SectionCheck::Present, goal, "goal in {text:?}");
            assert_eq!(r.steps == SectionCheck::Present, steps, "steps in {text:?}");
            assert_eq!(r.risks == SectionCheck::Present, risks, "risks in {text:?}");
        }
    }

    #[test]
    fn missing_sections_and_short_plan_warn() {
        let r = assess(PlanInput::Text("Just do it."));
        assert_eq!(r.chars, 11);
        assert_eq!(
            r.warnings(),
            vec![
                "plan is short: 11 chars, below 500".to_string(),
                "plan does not name a goal (Goal/Objective/Context)".to_string(),
                "plan does not name steps (a Steps heading or a list)".to_string(),
                "plan does not name risks (Risks/Trade-offs/Open questions)".to_string(),
            ]
        );
    }

    #[test]
    fn long_plan_warns() {
        let plan = padded(GOOD, 15_001);
        let r = assess(PlanInput::Text(&plan));
        assert_eq!(r.band, LengthBand::AboveP90);
        assert_eq!(
            r.warnings(),
            vec!["plan is long: 15001 chars, above 15000".to_string()]
        );
        let at_limit = padded(GOOD, 15_000);
        assert!(assess(PlanInput::Text(&at_limit)).warnings().is_empty());
        let at_min = padded(GOOD, 500);
        assert!(assess(PlanInput::Text(&at_min)).warnings().is_empty());
    }

    #[test]
    fn band_boundaries() {
        assert_eq!(LengthBand::of(0), LengthBand::BelowP50);
        assert_eq!(LengthBand::of(4_905), LengthBand::BelowP50);
        assert_eq!(LengthBand::of(4_906), LengthBand::P50ToP90);
        assert_eq!(LengthBand::of(11_617), LengthBand::P50ToP90);
        assert_eq!(LengthBand::of(11_618), LengthBand::AboveP90);
    }

    #[test]
    fn counts_characters_not_bytes() {
        let r = assess(PlanInput::Text("ééé"));
        assert_eq!(r.chars, 3);
    }

    #[test]
    fn token_count_only() {
        let r = assess(PlanInput::Tokens(650));
        assert_eq!(r.chars, 2_600);
        assert!(r.estimated);
        assert_eq!(r.band, LengthBand::BelowP50);
        assert_eq!(r.goal, SectionCheck::Unknown);
        assert_eq!(r.steps, SectionCheck::Unknown);
        assert_eq!(r.risks, SectionCheck::Unknown);
        assert_eq!(
            r.warnings(),
            vec!["plan sections unknown: only a token count was given".to_string()]
        );
        assert_eq!(
            r.length_summary(),
            "~2600 chars (estimated at 4 chars/token), below p50 (4906 chars)"
        );

        let r = assess(PlanInput::Tokens(100));
        assert_eq!(
            r.warnings()[0],
            "plan is short: 400 chars (estimated), below 500"
        );
        assert_eq!(assess(PlanInput::Tokens(2_000)).band, LengthBand::P50ToP90);
        assert_eq!(assess(PlanInput::Tokens(3_000)).band, LengthBand::AboveP90);
        assert_eq!(assess(PlanInput::Tokens(u64::MAX)).chars, u64::MAX);
    }

    #[test]
    fn length_summary_for_text() {
        let plan = padded(GOOD, 12_000);
        assert_eq!(
            assess(PlanInput::Text(&plan)).length_summary(),
            "12000 chars, above p90 (11617 chars)"
        );
    }

    proptest! {
        #[test]
        fn never_panics_and_counts_chars(text in "\\PC{0,300}") {
            let r = assess(PlanInput::Text(&text));
            prop_assert_eq!(r.chars, text.chars().count() as u64);
            prop_assert!(r.goal != SectionCheck::Unknown);
            let _ = r.warnings();
        }
    }
}
