//! Plan file names: readable word slugs drawn from a seed.
//!
//! Each session writes its plan to `<plans_dir>/<slug>.md`, and a subagent of that session to
//! `<plans_dir>/<slug>-agent-<id>.md`. A slug such as `brave-fox` is easier to spot in a
//! directory listing than a hash, and drawing it from the scenario's seed keeps replays
//! byte-identical (no clock, no OS randomness). The generator is a self-contained splitmix64 so
//! the slug for a seed never changes with a dependency upgrade.
//!
//! The default plans directory is the relative path [`DEFAULT_PLANS_DIR`] (`plans`), resolved
//! against the scenario's working directory; nothing here touches the file system.
//! [`PlanFiles::is_plan_file`] compares paths lexically (component by component), so a path
//! with `..`, or an absolute path when `plans_dir` is relative, is not a plan file.

use std::path::{Path, PathBuf};

/// Plans directory used when a scenario does not name one (relative to its working directory).
pub const DEFAULT_PLANS_DIR: &str = "plans";

const ADJECTIVES: [&str; 64] = [
    "amber", "ancient", "bold", "brave", "breezy", "bright", "brisk", "calm", "clever", "cosy",
    "crisp", "curious", "daring", "dusty", "eager", "early", "fancy", "fast", "fierce", "fluffy",
    "gentle", "giant", "glad", "golden", "grand", "happy", "hidden", "humble", "icy", "jolly",
    "keen", "kind", "lively", "lucky", "merry", "mighty", "misty", "modest", "noble", "odd",
    "plain", "polite", "proud", "quick", "quiet", "rapid", "rusty", "shiny", "silent", "silver",
    "simple", "sleepy", "smooth", "snowy", "steady", "sunny", "swift", "tall", "tidy", "tiny",
    "warm", "wild", "wise", "young",
];

const NOUNS: [&str; 64] = [
    "anchor", "apple", "badger", "beacon", "bear", "birch", "bison", "breeze", "brook", "canyon",
    "cedar", "cliff", "cloud", "comet", "crane", "creek", "dawn", "deer", "dune", "eagle", "ember",
    "falcon", "fern", "field", "finch", "forest", "fox", "garden", "harbor", "hawk", "heron",
    "hill", "island", "lake", "lantern", "maple", "meadow", "moon", "moss", "otter", "owl",
    "panda", "pebble", "pine", "planet", "pond", "rabbit", "raven", "reef", "river", "robin",
    "salmon", "shore", "sparrow", "spruce", "star", "stone", "summit", "tiger", "valley", "walrus",
    "willow", "wolf", "zebra",
];

/// One step of splitmix64: advances `state` and returns the next output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Picks one of 64 words from the top bits of a generator output.
fn pick(words: &[&'static str; 64], value: u64) -> &'static str {
    // `value >> 58` is below 64, so the index is always in range.
    words[(value >> 58) as usize]
}

/// Where the plan files of one session live, and what they are called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFiles {
    /// Directory holding the plan files.
    pub plans_dir: PathBuf,
    /// Seed the slug is drawn from.
    pub seed: u64,
}

impl PlanFiles {
    /// Plan files in `plans_dir` with the slug for `seed`.
    pub fn new(plans_dir: impl Into<PathBuf>, seed: u64) -> Self {
        Self {
            plans_dir: plans_dir.into(),
            seed,
        }
    }

    /// Plan files in [`DEFAULT_PLANS_DIR`] with the slug for `seed`.
    pub fn with_default_dir(seed: u64) -> Self {
        Self::new(DEFAULT_PLANS_DIR, seed)
    }

    /// The `adjective-noun` slug for this seed, e.g. `brave-fox`.
    pub fn slug(&self) -> String {
        let mut state = self.seed;
        let adjective = pick(&ADJECTIVES, splitmix64(&mut state));
        let noun = pick(&NOUNS, splitmix64(&mut state));
        format!("{adjective}-{noun}")
    }

    /// `<plans_dir>/<slug>.md`.
    pub fn main_plan_path(&self) -> PathBuf {
        self.plans_dir.join(format!("{}.md", self.slug()))
    }

    /// `<plans_dir>/<slug>-agent-<id>.md`.
    ///
    /// Characters of `agent_id` other than ASCII letters, digits, `-` and `_` are replaced by
    /// `_`, so an id can never leave the plans directory; an empty id becomes `_`.
    pub fn agent_plan_path(&self, agent_id: &str) -> PathBuf {
        let mut id: String = agent_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if id.is_empty() {
            id.push('_');
        }
        self.plans_dir
            .join(format!("{}-agent-{id}.md", self.slug()))
    }

    /// Whether `path` is this session's main plan file or one of its subagent plan files.
    ///
    /// Plan mode allows writing exactly these files. The check is lexical: the parent must equal
    /// `plans_dir` and the file name must be `<slug>.md` or `<slug>-agent-<id>.md` with a
    /// non-empty id made of ASCII letters, digits, `-` and `_`.
    pub fn is_plan_file(&self, path: &Path) -> bool {
        if path.parent() != Some(self.plans_dir.as_path()) {
            return false;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        let Some(stem) = name.strip_suffix(".md") else {
            return false;
        };
        let slug = self.slug();
        let Some(rest) = stem.strip_prefix(slug.as_str()) else {
            return false;
        };
        if rest.is_empty() {
            return true;
        }
        match rest.strip_prefix("-agent-") {
            Some(id) => {
                !id.is_empty()
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn word_lists_are_distinct_plain_words() {
        for list in [&ADJECTIVES, &NOUNS] {
            let set: BTreeSet<_> = list.iter().collect();
            assert_eq!(set.len(), 64);
            assert!(list
                .iter()
                .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase())));
        }
    }

    #[test]
    fn splitmix64_known_values() {
        // Reference outputs of splitmix64 seeded with 0.
        let mut s = 0;
        assert_eq!(splitmix64(&mut s), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut s), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn same_seed_same_slug() {
        let a = PlanFiles::new("plans", 42);
        let b = PlanFiles::new("elsewhere", 42);
        assert_eq!(a.slug(), b.slug());
        assert_eq!(a.slug(), a.slug());
    }

    #[test]
    fn golden_slugs() {
        // Pinned so a change to the generator or word lists is a deliberate, visible change.
        assert_eq!(PlanFiles::with_default_dir(0).slug(), "swift-garden");
        assert_eq!(PlanFiles::with_default_dir(1).slug(), "misty-raven");
        assert_eq!(PlanFiles::with_default_dir(42).slug(), "shiny-cedar");
    }

    #[test]
    fn slug_shape() {
        let slug = PlanFiles::with_default_dir(7).slug();
        let (adj, noun) = slug.split_once('-').expect("adjective-noun");
        assert!(ADJECTIVES.contains(&adj), "{adj}");
        assert!(NOUNS.contains(&noun), "{noun}");
    }

    #[test]
    fn seeds_spread_over_many_slugs() {
        let distinct: BTreeSet<String> = (0..1000u64)
            .map(|s| PlanFiles::with_default_dir(s).slug())
            .collect();
        assert!(distinct.len() > 500, "only {} distinct", distinct.len());
        let adjectives: BTreeSet<&str> = distinct
            .iter()
            .filter_map(|s| s.split_once('-').map(|(a, _)| a))
            .collect();
        assert_eq!(adjectives.len(), 64, "every adjective is reachable");
    }

    #[test]
    fn path_shapes() {
        let files = PlanFiles::new("/repo/plans", 3);
        let slug = files.slug();
        assert_eq!(
            files.main_plan_path(),
            PathBuf::from(format!("/repo/plans/{slug}.md"))
        );
        assert_eq!(
            files.agent_plan_path("a1"),
            PathBuf::from(format!("/repo/plans/{slug}-agent-a1.md"))
        );
        assert_eq!(
            files.agent_plan_path("../../etc/passwd"),
            PathBuf::from(format!("/repo/plans/{slug}-agent-______etc_passwd.md"))
        );
        assert_eq!(
            files.agent_plan_path(""),
            PathBuf::from(format!("/repo/plans/{slug}-agent-_.md"))
        );
        assert_eq!(
            PlanFiles::with_default_dir(3).main_plan_path(),
            Path::new("plans").join(format!("{slug}.md"))
        );
    }

    #[test]
    fn recognises_plan_files() {
        let files = PlanFiles::new("plans", 11);
        let slug = files.slug();
        assert!(files.is_plan_file(&files.main_plan_path()));
        assert!(files.is_plan_file(&files.agent_plan_path("worker-2")));
        assert!(files.is_plan_file(Path::new(&format!("plans/{slug}-agent-x.md"))));

        let other = PlanFiles::new("plans", 12);
        assert_ne!(other.slug(), slug, "seeds 11 and 12 happen to differ");
        for bad in [
            format!("plans/{slug}.txt"),
            format!("plans/{slug}"),
            format!("plans/{slug}-agent-.md"),
            format!("plans/{slug}-agent-a/b.md"),
            format!("plans/{slug}x.md"),
            format!("plans/{slug}-notes.md"),
            format!("other/{slug}.md"),
            format!("plans/sub/{slug}.md"),
            format!("plans/../plans/{slug}.md"),
            format!("/abs/plans/{slug}.md"),
            format!("{slug}.md"),
            "src/main.rs".to_string(),
        ] {
            assert!(!files.is_plan_file(Path::new(&bad)), "{bad}");
        }
        assert!(!files.is_plan_file(&other.main_plan_path()));
    }

    proptest! {
        #[test]
        fn slug_is_deterministic_and_agent_paths_stay_inside(seed in any::<u64>(), id in ".{0,24}") {
            let files = PlanFiles::new("plans", seed);
            prop_assert_eq!(files.slug(), PlanFiles::new("plans", seed).slug());
            let path = files.agent_plan_path(&id);
            prop_assert_eq!(path.parent(), Some(Path::new("plans")));
            prop_assert!(files.is_plan_file(&path));
        }
    }
}
