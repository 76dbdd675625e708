//! Plan-entry policy: should the agent suggest plan mode for this task?
//!
//! Scenarios replay sessions where the agent decided (or not) to enter plan mode on its own.
//! To compare "how often would we plan" across user populations we need that decision to be a
//! fixed, explainable rule of the task text, not a model call. Two policies are modelled:
//!
//! - [`PlanPolicy::Conservative`] (external users): plan for any non-trivial task: a new
//!   feature, a multi-file change, an architectural topic, an open choice, unclear requirements.
//! - [`PlanPolicy::Permissive`] (internal users): plan only for genuine architectural
//!   ambiguity: an architectural topic **and** an open choice.
//!
//! # Signals
//!
//! The task is lowercased and split into words (runs of letters and digits, so `trade-off` is
//! `trade off`); phrases match consecutive words. Each kind of signal is reported once, with the
//! phrase that occurs earliest in the text.
//!
//! | Reason | Phrases |
//! |--------|---------|
//! | [`Reason::NewFeature`] | `add`, `implement`, `build`, `create`, `support`, `introduce`, `integrate`, `develop`, `set up`, `new feature` |
//! | [`Reason::MultiFile`] | `across`, `all files`, `every file`, `every module`, `all modules`, `multiple files`, `several files`, `refactor`, `refactoring`, `migrate`, `migration`, `throughout`, `codebase`, `whole project`, `entire project` |
//! | [`Reason::ArchitectureTopic`] | `architecture`, `architectural`, `design`, `redesign`, `rearchitect`, `schema`, `layer`, `subsystem`, `framework`, `database`, `storage`, `protocol`, `infrastructure` |
//! | [`Reason::OpenChoice`] | `choose between`, `which approach`, `which option`, `which one`, `should we`, `should i`, `whether`, `trade off`, `trade offs`, `tradeoff`, `tradeoffs`, `versus`, `vs`; and `or` when the task contains `?` |
//! | [`Reason::UnclearRequirements`] | `somehow`, `maybe`, `perhaps`, `not sure`, `unclear`, `figure out`, `some way`, `something like`; or a `?` anywhere |
//! | [`Reason::Trivial`] | `typo`, `typos`, `spelling`, `misspelling`, `rename`, `whitespace`, `fix the comment`, `fix a comment`, `fix comment`, `bump version`, `bump the version` |
//! | [`Reason::ShortFix`] | one line of at most 6 words starting with `fix` |
//!
//! # Decision
//!
//! | Policy | Suggests plan mode when |
//! |--------|-------------------------|
//! | both | never when a trivial signal (`Trivial` or `ShortFix`) is present without an architectural topic or open choice |
//! | Conservative | any of `NewFeature`, `MultiFile`, `ArchitectureTopic`, `OpenChoice`, `UnclearRequirements` |
//! | Permissive | `ArchitectureTopic` **and** `OpenChoice` |
//!
//! The rules are keyword heuristics: "the build fails" counts `build` as a feature verb. They are
//! meant to be stable and explainable, not clever.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which user population's plan-entry behaviour to model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPolicy {
    /// External users: suggest plan mode for any non-trivial task.
    Conservative,
    /// Internal users: suggest plan mode only for genuine architectural ambiguity.
    Permissive,
}

/// One signal found in the task text, with the phrase that triggered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", content = "phrase", rename_all = "snake_case")]
pub enum Reason {
    /// The task asks for new functionality.
    NewFeature(&'static str),
    /// The change likely spans many files.
    MultiFile(&'static str),
    /// The task is about the system's structure.
    ArchitectureTopic(&'static str),
    /// The task leaves a choice between approaches open.
    OpenChoice(&'static str),
    /// The requirements are vague or asked as a question.
    UnclearRequirements(&'static str),
    /// A mechanical change that needs no plan.
    Trivial(&'static str),
    /// A one-line, few-word fix.
    ShortFix,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NewFeature(p) => write!(f, "new feature (\"{p}\")"),
            Reason::MultiFile(p) => write!(f, "multi-file change (\"{p}\")"),
            Reason::ArchitectureTopic(p) => write!(f, "architectural topic (\"{p}\")"),
            Reason::OpenChoice(p) => write!(f, "open choice between approaches (\"{p}\")"),
            Reason::UnclearRequirements(p) => write!(f, "unclear requirements (\"{p}\")"),
            Reason::Trivial(p) => write!(f, "trivial change (\"{p}\")"),
            Reason::ShortFix => write!(f, "short single-line fix"),
        }
    }
}

/// The verdict for one task under one policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    /// Whether to suggest plan mode.
    pub suggest: bool,
    /// Every signal found in the task, in the order of the signal table (not only those the
    /// policy acted on), so a "no" can be explained too.
    pub reasons: Vec<Reason>,
}

const FEATURE: &[&str] = &[
    "add",
    "implement",
    "build",
    "create",
    "support",
    "introduce",
    "integrate",
    "develop",
    "set up",
    "new feature",
];
const MULTI_FILE: &[&str] = &[
    "across",
    "all files",
    "every file",
    "every module",
    "all modules",
    "multiple files",
    "several files",
    "refactor",
    "refactoring",
    "migrate",
    "migration",
    "throughout",
    "codebase",
    "whole project",
    "entire project",
];
const ARCHITECTURE: &[&str] = &[
    "architecture",
    "architectural",
    "design",
    "redesign",
    "rearchitect",
    "schema",
    "layer",
    "subsystem",
    "framework",
    "database",
    "storage",
    "protocol",
    "infrastructure",
];
const CHOICE: &[&str] = &[
    "choose between",
    "which approach",
    "which option",
    "which one",
    "should we",
    "should i",
    "whether",
    "trade off",
    "trade offs",
    "tradeoff",
    "tradeoffs",
    "versus",
    "vs",
];
const UNCLEAR: &[&str] = &[
    "somehow",
    "maybe",
    "perhaps",
    "not sure",
    "unclear",
    "figure out",
    "some way",
    "something like",
];
const TRIVIAL: &[&str] = &[
    "typo",
    "typos",
    "spelling",
    "misspelling",
    "rename",
    "whitespace",
    "fix the comment",
    "fix a comment",
    "fix comment",
    "bump version",
    "bump the version",
];

/// Longest task (in whitespace-separated words) that counts as a short fix.
const SHORT_FIX_MAX_WORDS: usize = 6;

/// The phrase from `phrases` that starts earliest in `words` (ties: table order).
fn earliest(words: &[String], phrases: &[&'static str]) -> Option<&'static str> {
    (0..words.len()).find_map(|start| {
        phrases.iter().copied().find(|phrase| {
            phrase
                .split(' ')
                .enumerate()
                .all(|(i, p)| words.get(start + i).is_some_and(|w| w == p))
        })
    })
}

/// All signals in `task`, in signal-table order.
fn signals(task: &str) -> Vec<Reason> {
    let lower = task.trim().to_lowercase();
    let words: Vec<String> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let question = lower.contains('?');
    let mut reasons = Vec::new();
    if let Some(p) = earliest(&words, FEATURE) {
        reasons.push(Reason::NewFeature(p));
    }
    if let Some(p) = earliest(&words, MULTI_FILE) {
        reasons.push(Reason::MultiFile(p));
    }
    if let Some(p) = earliest(&words, ARCHITECTURE) {
        reasons.push(Reason::ArchitectureTopic(p));
    }
    let choice = earliest(&words, CHOICE)
        .or_else(|| (question && words.iter().any(|w| w == "or")).then_some("or"));
    if let Some(p) = choice {
        reasons.push(Reason::OpenChoice(p));
    }
    if let Some(p) = earliest(&words, UNCLEAR).or(question.then_some("?")) {
        reasons.push(Reason::UnclearRequirements(p));
    }
    if let Some(p) = earliest(&words, TRIVIAL) {
        reasons.push(Reason::Trivial(p));
    }
    let single_line = !lower.contains('\n');
    if single_line
        && lower.split_whitespace().next() == Some("fix")
        && lower.split_whitespace().count() <= SHORT_FIX_MAX_WORDS
    {
        reasons.push(Reason::ShortFix);
    }
    reasons
}

impl PlanPolicy {
    /// Whether to suggest plan mode for `task` (the user's first message), with reasons.
    pub fn evaluate(self, task: &str) -> Suggestion {
        let reasons = signals(task);
        let has = |pred: fn(&Reason) -> bool| reasons.iter().any(pred);
        let architecture = has(|r| matches!(r, Reason::ArchitectureTopic(_)));
        let choice = has(|r| matches!(r, Reason::OpenChoice(_)));
        let trivial = has(|r| matches!(r, Reason::Trivial(_) | Reason::ShortFix));
        let vetoed = trivial && !(architecture || choice);
        let suggest = !vetoed
            && match self {
                PlanPolicy::Conservative => has(|r| {
                    matches!(
                        r,
                        Reason::NewFeature(_)
                            | Reason::MultiFile(_)
                            | Reason::ArchitectureTopic(_)
                            | Reason::OpenChoice(_)
                            | Reason::UnclearRequirements(_)
                    )
                }),
                PlanPolicy::Permissive => architecture && choice,
            };
        Suggestion { suggest, reasons }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use Reason::*;

    /// (task, conservative suggests, permissive suggests)
    const CASES: &[(&str, bool, bool)] = &[
        ("fix typo in README", false, false),
        ("implement user authentication", true, false),
        (
            "redesign the caching layer: should we use Redis or an in-process LRU?",
            true,
            true,
        ),
        ("rename the variable foo to bar", false, false),
        ("add a --verbose flag to the CLI", true, false),
        ("migrate all tests from mocha to jest", true, false),
        ("make the app faster somehow", true, false),
        (
            "which approach should we take for the database schema: one table per tenant or a shared table?",
            true,
            true,
        ),
        ("fix the off-by-one error in parse_range", false, false),
        ("update the copyright year", false, false),
        ("refactor the error handling across every module", true, false),
        ("design the architecture for the plugin system", true, false),
        ("fix the comment in main.rs", false, false),
        (
            "rename the storage layer, or split it? not sure whether it is worth it",
            true,
            true,
        ),
        ("", false, false),
    ];

    #[test]
    fn example_tasks_under_both_policies() {
        for (task, conservative, permissive) in CASES {
            assert_eq!(
                PlanPolicy::Conservative.evaluate(task).suggest,
                *conservative,
                "conservative: {task:?} {:?}",
                PlanPolicy::Conservative.evaluate(task).reasons
            );
            assert_eq!(
                PlanPolicy::Permissive.evaluate(task).suggest,
                *permissive,
                "permissive: {task:?} {:?}",
                PlanPolicy::Permissive.evaluate(task).reasons
            );
        }
    }

    #[test]
    fn reasons_name_the_triggering_phrase() {
        assert_eq!(
            PlanPolicy::Conservative
                .evaluate("fix typo in README")
                .reasons,
            vec![Trivial("typo"), ShortFix]
        );
        assert_eq!(
            PlanPolicy::Permissive
                .evaluate("Implement user authentication")
                .reasons,
            vec![NewFeature("implement")]
        );
        assert_eq!(
            PlanPolicy::Permissive
                .evaluate("redesign the caching layer: should we use Redis or an in-process LRU?")
                .reasons,
            vec![
                ArchitectureTopic("redesign"),
                OpenChoice("should we"),
                UnclearRequirements("?")
            ]
        );
        assert_eq!(
            PlanPolicy::Conservative
                .evaluate("Weigh the trade-offs of the storage format")
                .reasons,
            vec![ArchitectureTopic("storage"), OpenChoice("trade offs")]
        );
    }

    #[test]
    fn earliest_phrase_is_reported() {
        let s = PlanPolicy::Conservative.evaluate("create and then add a page");
        assert_eq!(s.reasons, vec![NewFeature("create")]);
        let s = PlanPolicy::Conservative.evaluate("migrate the codebase");
        assert_eq!(s.reasons, vec![MultiFile("migrate")]);
    }

    #[test]
    fn or_needs_a_question() {
        assert!(
            !PlanPolicy::Permissive
                .evaluate("move the database to postgres or mysql")
                .suggest
        );
        assert!(
            PlanPolicy::Permissive
                .evaluate("move the database to postgres or mysql?")
                .suggest
        );
    }

    #[test]
    fn whole_words_only() {
        // "address" contains "add", "layered" contains "layer", "scoring" contains "or".
        let s = PlanPolicy::Conservative.evaluate("update the email address in layered scoring");
        assert_eq!(s.reasons, vec![]);
        assert!(!s.suggest);
    }

    #[test]
    fn short_fix_needs_one_short_line() {
        assert_eq!(
            PlanPolicy::Conservative.evaluate("fix the crash").reasons,
            vec![ShortFix]
        );
        let multi_line = PlanPolicy::Conservative.evaluate("fix the crash\nand add retries");
        assert!(!multi_line.reasons.contains(&ShortFix));
        assert!(multi_line.suggest);
        let long =
            PlanPolicy::Conservative.evaluate("fix the crash and add retries to the http client");
        assert!(!long.reasons.contains(&ShortFix));
        assert!(long.suggest);
    }

    #[test]
    fn reasons_read_well() {
        assert_eq!(NewFeature("add").to_string(), "new feature (\"add\")");
        assert_eq!(ShortFix.to_string(), "short single-line fix");
        assert_eq!(
            OpenChoice("or").to_string(),
            "open choice between approaches (\"or\")"
        );
    }

    #[test]
    fn policy_serde_names() {
        assert_eq!(
            serde_json::to_string(&PlanPolicy::Conservative).expect("ser"),
            "\"conservative\""
        );
        let p: PlanPolicy = serde_json::from_str("\"permissive\"").expect("de");
        assert_eq!(p, PlanPolicy::Permissive);
    }

    proptest! {
        #[test]
        fn permissive_never_suggests_more(task in ".{0,120}") {
            let c = PlanPolicy::Conservative.evaluate(&task);
            let p = PlanPolicy::Permissive.evaluate(&task);
            prop_assert_eq!(&c.reasons, &p.reasons);
            prop_assert!(!p.suggest || c.suggest);
        }
    }
}
