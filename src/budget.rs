//! One resource budget for every way a session enters plancache (scenario files, generated
//! sessions, imports, validation, library callers of `Session::new`).
//!
//! A replay keeps every distinct piece of content as token ids (4 bytes per token, count-only
//! content included), so what a session may declare bounds what a replay may allocate. Three
//! limits cover it: the total prompt content of a session in tokens, its steps (main stream and
//! subagents together) and its request streams. Exceeding one is bad input: the error names the
//! file, the place where the limit is crossed, the limit and the flag that raises it.
//!
//! Callers that build sessions themselves (importers, validators) count as they go with a
//! [`Tally`]:
//!
//! ```
//! use std::path::Path;
//! use plancache::budget::Budget;
//!
//! let mut tally = Budget::current().tally(Path::new("session.jsonl"));
//! tally.add_stream(|| "line 1".into()).unwrap();
//! tally.add_step(|| "line 1".into()).unwrap();
//! tally.add_tokens(1200, || "line 1, input_tokens".into()).unwrap();
//! assert!(tally.add_tokens(u64::MAX, || "line 2, input_tokens".into()).is_err());
//! ```

mod count;

use std::path::Path;
use std::sync::RwLock;

use serde::Serialize;

use crate::util::ScenarioError;

/// Limits on what one session may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Total tokens of all the content a session declares (every block counted once, however
    /// many requests repeat it). Flag: `--max-session-tokens`.
    pub max_session_tokens: u64,
    /// Steps of the main stream and of every subagent together. Flag: `--max-steps`.
    pub max_steps: u64,
    /// Request streams: the main one plus one per subagent. Flag: `--max-streams`.
    pub max_streams: u64,
}

/// Flag names, for messages: the token budget's.
pub const TOKENS_FLAG: &str = "--max-session-tokens";
/// The step budget's flag.
pub const STEPS_FLAG: &str = "--max-steps";
/// The stream budget's flag.
pub const STREAMS_FLAG: &str = "--max-streams";

impl Budget {
    /// The defaults: 25 M tokens is about 100 MB of token ids, more than a hundred full context
    /// windows of distinct content; the longest real plan sessions we have seen hold a few
    /// thousand steps and a few dozen subagents.
    pub const DEFAULT: Budget = Budget {
        max_session_tokens: 25_000_000,
        max_steps: 100_000,
        max_streams: 1_000,
    };

    /// The budget in force for this process: [`Budget::DEFAULT`] unless the command line (or a
    /// library caller) set another with [`Budget::set_current`].
    pub fn current() -> Budget {
        CURRENT.read().map(|b| *b).unwrap_or(Budget::DEFAULT)
    }

    /// Sets the process-wide budget (the `--max-*` flags do this before any command runs).
    pub fn set_current(budget: Budget) {
        if let Ok(mut b) = CURRENT.write() {
            *b = budget;
        }
    }

    /// A running count against this budget for the session read from `file`.
    pub fn tally(self, file: &Path) -> Tally<'_> {
        Tally {
            budget: self,
            file,
            tokens: 0,
            steps: 0,
            streams: 0,
            sent: Vec::new(),
        }
    }

    /// Checks a scenario document (as parsed from its TOML text). Counts every `*tokens` size
    /// except `reasoning_tokens` (never part of a prompt), every text at one token per byte at
    /// most, every step of `steps` lists (subagents' included), and one stream per agent.
    pub fn check_document(self, doc: &toml::Value, file: &Path) -> Result<(), ScenarioError> {
        let mut tally = self.tally(file);
        tally.add_stream(|| "the main stream".into())?;
        walk(doc, &mut String::new(), &mut tally)
    }

    /// Checks a scenario built in memory (generated, imported or written by a library caller:
    /// any `scenario::Scenario`, counted through serde, so this layer needs no scenario type);
    /// places are paths into the document as `plancache generate` would write it.
    pub fn check_scenario<S: Serialize>(
        self,
        scenario: &S,
        file: &Path,
    ) -> Result<(), ScenarioError> {
        // Counted on the structs first: running totals only grow, so totals within the budget
        // mean no limit is crossed anywhere. Only a session over it (or a shape the counter
        // leaves to the walk) is copied into a document, to name the place where it crosses.
        if let Some(t) = count::totals(scenario) {
            if t.tokens.is_some_and(|n| n <= self.max_session_tokens)
                && t.steps <= self.max_steps
                && t.streams <= self.max_streams
            {
                return Ok(());
            }
        }
        // Through JSON: TOML integers stop at i64::MAX, and a scenario may carry a larger seed.
        let json = serde_json::to_value(scenario).map_err(|e| {
            ScenarioError::new(file, None, format!("cannot represent the scenario: {e}"))
        })?;
        self.check_document(&json_to_toml(json), file)
    }
}

static CURRENT: RwLock<Budget> = RwLock::new(Budget::DEFAULT);

/// The same document as TOML values (what [`Budget::check_document`] walks); integers beyond
/// `i64` saturate (only sizes are counted, and those are `u32`), nulls (absent options) vanish.
fn json_to_toml(v: serde_json::Value) -> toml::Value {
    use serde_json::Value as J;
    match v {
        J::Null => toml::Value::Table(toml::Table::new()),
        J::Bool(b) => toml::Value::Boolean(b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None if n.as_u64().is_some() => toml::Value::Integer(i64::MAX),
            None => toml::Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        J::String(s) => toml::Value::String(s),
        J::Array(a) => toml::Value::Array(a.into_iter().map(json_to_toml).collect()),
        J::Object(o) => toml::Value::Table(
            o.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, json_to_toml(v)))
                .collect(),
        ),
    }
}

/// Largest input file plancache reads: 4 bytes per token of the session budget (100 MB by
/// default), so `/dev/zero` or a runaway file is an error rather than an endless allocation.
pub fn max_input_bytes() -> u64 {
    Budget::current().max_session_tokens.saturating_mul(4)
}

/// Reads a text input (scenario, sweep file, shard) of at most [`max_input_bytes`]; works on
/// pipes too (`<(...)`). `what` names the kind of file in the message, which does not repeat the
/// path (callers put it first).
pub fn read_text(path: &Path, what: &str) -> Result<String, InputError> {
    use std::io::Read;
    let limit = max_input_bytes();
    let io = |source| InputError::Io {
        what: what.to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            what: what.to_string(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
        what: what.to_string(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// An input file [`read_text`] could not read. The message does not repeat the path (callers
/// put it first).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read.
    #[error("cannot read {what}: {source}")]
    Io {
        /// The kind of file (`scenario`, `sweep file`, ...).
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is over [`max_input_bytes`].
    #[error("the {what} is larger than {limit} bytes (4 per token of the session budget; raise it with `{flag} N`)", flag = TOKENS_FLAG)]
    TooLarge {
        /// The kind of file.
        what: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The bytes are not UTF-8 text.
    #[error("cannot read {what}: not UTF-8 text (byte {offset})")]
    NotUtf8 {
        /// The kind of file.
        what: String,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
}

/// Checks a scenario against the process-wide budget ([`Budget::current`]).
pub fn check_scenario<S: Serialize>(scenario: &S, file: &Path) -> Result<(), ScenarioError> {
    Budget::current().check_scenario(scenario, file)
}

/// What a session has declared so far, checked against a [`Budget`] at every addition.
#[derive(Debug)]
pub struct Tally<'a> {
    budget: Budget,
    file: &'a Path,
    tokens: u64,
    steps: u64,
    streams: u64,
    /// Per enclosing `steps` array, innermost last: whether its stream has sent a request.
    sent: Vec<StreamSent>,
}

impl Tally<'_> {
    /// Adds `n` tokens of content at `place` (a closure, so the happy path formats nothing).
    pub fn add_tokens(
        &mut self,
        n: u64,
        place: impl FnOnce() -> String,
    ) -> Result<(), ScenarioError> {
        let limit = self.budget.max_session_tokens;
        match self.tokens.checked_add(n) {
            Some(total) if total <= limit => {
                self.tokens = total;
                Ok(())
            }
            total => Err(self.over(
                place(),
                format!(
                    "the session's content reaches {} tokens here, above the limit of {limit}",
                    total.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string())
                ),
                TOKENS_FLAG,
            )),
        }
    }

    /// Adds one step at `place`.
    pub fn add_step(&mut self, place: impl FnOnce() -> String) -> Result<(), ScenarioError> {
        self.add_steps(1, place)
    }

    /// Adds `n` steps (or requests a step makes, such as keep-alive pings) at `place`.
    pub fn add_steps(
        &mut self,
        n: u64,
        place: impl FnOnce() -> String,
    ) -> Result<(), ScenarioError> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.budget.max_steps {
            return Err(self.over(
                place(),
                format!(
                    "the session has more than {} steps (main stream and subagents together)",
                    self.budget.max_steps
                ),
                STEPS_FLAG,
            ));
        }
        Ok(())
    }

    /// Adds one request stream (the main stream or a subagent) at `place`.
    pub fn add_stream(&mut self, place: impl FnOnce() -> String) -> Result<(), ScenarioError> {
        self.streams += 1;
        if self.streams > self.budget.max_streams {
            return Err(self.over(
                place(),
                format!(
                    "the session has more than {} request streams (the main one plus one per subagent)",
                    self.budget.max_streams
                ),
                STREAMS_FLAG,
            ));
        }
        Ok(())
    }

    /// Tokens counted so far.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    fn over(&self, place: String, message: String, flag: &str) -> ScenarioError {
        ScenarioError::new(self.file, Some(place), message).with_hint(format!(
            "check for sizes with extra digits; to replay a session this large, raise the limit with `{flag} N`"
        ))
    }
}

/// The items of a `steps` array (one stream's script), each walked knowing whether the stream
/// has sent a request its keep-alive pings would re-send.
fn walk_steps(
    items: &[toml::Value],
    at: &mut String,
    tally: &mut Tally<'_>,
) -> Result<(), ScenarioError> {
    tally.sent.push(StreamSent::default());
    for (i, v) in items.iter().enumerate() {
        let len = at.len();
        at.push_str(&format!("[{}]", i + 1));
        walk(v, at, tally)?;
        at.truncate(len);
        let kind = v.as_table().and_then(|t| t.keys().next());
        if let (Some(kind), Some(sent)) = (kind, tally.sent.last_mut()) {
            sent.after(kind);
        }
    }
    tally.sent.pop();
    Ok(())
}

/// Whether a stream has a request to keep warm: the replay sends keep-alive pings only after a
/// request of the stream and not after a compaction until the next one (docs/scenario-format.md,
/// "no pings"), so the budget counts no pings for a wait before that.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamSent(bool);

impl StreamSent {
    /// Follows the stream past a step of kind `step` (its key in the scenario file).
    fn after(&mut self, step: &str) {
        match step {
            // One API request each; no other step sends one of the stream's own.
            "assistant" => self.0 = true,
            // The summarisation prompt is not the new conversation's: nothing to keep warm.
            "compact" => self.0 = false,
            _ => {}
        }
    }

    /// A request has been sent since the stream began or was compacted.
    fn has_sent(self) -> bool {
        self.0
    }
}

fn walk(value: &toml::Value, at: &mut String, tally: &mut Tally<'_>) -> Result<(), ScenarioError> {
    match value {
        toml::Value::Table(t) => {
            for (key, v) in t {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(key);
                match v {
                    toml::Value::Integer(n)
                        if key.ends_with("tokens") && key != "reasoning_tokens" =>
                    {
                        tally.add_tokens(u64::try_from(*n).unwrap_or(0), || at.clone())?;
                    }
                    toml::Value::Array(items) if key == "steps" => {
                        for i in 0..items.len() {
                            tally.add_step(|| format!("{at}[{}]", i + 1))?;
                        }
                        walk_steps(items, at, tally)?;
                        at.truncate(len);
                        continue;
                    }
                    toml::Value::Table(w) if key == "wait" => {
                        // Each keep-alive ping is a request: a long wait with a short interval
                        // would replay for ever.
                        let duration = |k: &str| {
                            w.get(k)
                                .and_then(toml::Value::as_str)
                                .and_then(|d| humantime::parse_duration(d).ok())
                        };
                        let keeps_warm = tally.sent.last().is_none_or(|s| s.has_sent());
                        if let (Some(total), Some(every)) =
                            (duration("duration"), duration("keepalive"))
                        {
                            if keeps_warm && !every.is_zero() {
                                let pings = total.as_nanos() / every.as_nanos();
                                tally
                                    .add_steps(u64::try_from(pings).unwrap_or(u64::MAX), || {
                                        format!("{at}.keepalive ({pings} pings)")
                                    })?;
                            }
                        }
                    }
                    toml::Value::Array(items) if key == "agents" => {
                        for i in 0..items.len() {
                            tally.add_stream(|| format!("{at}[{}]", i + 1))?;
                        }
                    }
                    _ => {}
                }
                walk(v, at, tally)?;
                at.truncate(len);
            }
        }
        toml::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("[{}]", i + 1));
                walk(v, at, tally)?;
                at.truncate(len);
            }
        }
        toml::Value::String(s) => {
            // Text is tokenized later; a token holds at least one byte.
            tally.add_tokens(s.len() as u64, || at.clone())?;
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts on the structs are the document walk's counts, on generated sessions with
    /// and without subagents, keep-alive waits and rejections, and on every bundled scenario.
    #[test]
    fn counting_on_the_structs_matches_the_document_walk() {
        use crate::scenario::generate::{generate, GeneratorParams};
        use crate::scenario::Scenario;
        let walked = |sc: &Scenario| {
            let doc = json_to_toml(serde_json::to_value(sc).unwrap());
            let mut tally = Budget::DEFAULT.tally(Path::new("x.toml"));
            tally.add_stream(|| "main".into()).unwrap();
            walk(&doc, &mut String::new(), &mut tally).unwrap();
            (Some(tally.tokens), tally.steps, tally.streams)
        };
        let mut scenarios: Vec<Scenario> = (0..6u64)
            .map(|seed| {
                generate(&GeneratorParams {
                    seed,
                    subagents: (seed % 3) as u32,
                    rejections: (seed % 2) as u32,
                    review_wait: if seed % 2 == 0 { "40m" } else { "3m" }.into(),
                    ..GeneratorParams::default()
                })
            })
            .collect();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let text = std::fs::read_to_string(&p).unwrap();
                scenarios.push(toml::from_str(&text).unwrap());
            }
        }
        let mut pings = 0;
        for sc in &scenarios {
            let t = count::totals(sc).expect("counted on the structs");
            assert_eq!((t.tokens, t.steps, t.streams), walked(sc), "{}", sc.name);
            pings += usize::from(serde_json::to_string(sc).unwrap().contains("keepalive"));
        }
        // Some scenario exercises the keep-alive pings.
        assert!(pings > 0);
    }

    fn doc(text: &str) -> toml::Value {
        toml::Value::Table(text.parse::<toml::Table>().unwrap())
    }

    #[test]
    fn tokens_add_up_across_the_document_and_name_the_crossing_place() {
        let b = Budget {
            max_session_tokens: 1000,
            ..Budget::DEFAULT
        };
        // Keys are visited in sorted order (`steps` before `system`): 500 (step 1, reasoning not
        // counted) + 200 (step 2) = 700 <= 1000; + 400 (system) = 1100 > 1000.
        let d = doc("system = { tokens = 400 }\n[[steps]]\nassistant = { tokens = 500, reasoning_tokens = 9999 }\n[[steps]]\nuser = { tokens = 200 }\n");
        let e = b.check_document(&d, Path::new("s.toml")).unwrap_err();
        assert_eq!(e.place.as_deref(), Some("system.tokens"));
        assert!(e.message.contains("1100 tokens"), "{}", e.message);
        assert!(e.hint.unwrap().contains(TOKENS_FLAG));
    }

    #[test]
    fn pings_are_counted_only_while_the_stream_has_a_request_to_keep_warm() {
        // Six steps; of the three 10-minute waits at 1-minute intervals only the one after the
        // reply pings (10): the first comes before any request, the last after a compaction.
        let wait = "[[steps]]\nwait = { duration = \"10m\", keepalive = \"1m\" }\n";
        let d = doc(&format!(
            "{wait}[[steps]]\nuser = \"a\"\n[[steps]]\nassistant = {{ tokens = 5 }}\n{wait}[[steps]]\ncompact = {{ summary_tokens = 9 }}\n{wait}"
        ));
        let mut tally = Budget::DEFAULT.tally(Path::new("s.toml"));
        walk(&d, &mut String::new(), &mut tally).unwrap();
        assert_eq!(tally.steps, 6 + 10);
        // A subagent's stream is its own: the main thread's reply does not let it ping.
        let d = doc(&format!(
            "[[steps]]\nassistant = {{ tokens = 5 }}\n[[steps]]\nagents = [{{ name = \"x\", steps = [{{ wait = {{ duration = \"10m\", keepalive = \"1m\" }} }}, {{ assistant = {{ tokens = 5 }} }}, {{ wait = {{ duration = \"10m\", keepalive = \"1m\" }} }}] }}]\n{wait}"
        ));
        let mut tally = Budget::DEFAULT.tally(Path::new("s.toml"));
        walk(&d, &mut String::new(), &mut tally).unwrap();
        assert_eq!(tally.steps, 3 + 3 + 10 + 10);
    }

    #[test]
    fn steps_and_streams_are_counted_with_subagents() {
        let b = Budget {
            max_steps: 3,
            ..Budget::DEFAULT
        };
        // Main steps 1, 2 then the agent's two steps: the fourth step overall is the agent's 2nd.
        let d = doc("[[steps]]\nuser = \"a\"\n[[steps]]\nagents = [{ name = \"x\", steps = [{ user = \"b\" }, { user = \"c\" }] }]\n");
        let e = b.check_document(&d, Path::new("s.toml")).unwrap_err();
        assert_eq!(e.place.as_deref(), Some("steps[2].agents[1].steps[2]"));
        let b = Budget {
            max_streams: 1,
            ..Budget::DEFAULT
        };
        let e = b.check_document(&d, Path::new("s.toml")).unwrap_err();
        assert_eq!(e.place.as_deref(), Some("steps[2].agents[1]"));
        assert!(e.hint.unwrap().contains(STREAMS_FLAG));
    }

    #[test]
    fn keepalive_pings_count_as_steps() {
        let b = Budget {
            max_steps: 1000,
            ..Budget::DEFAULT
        };
        // After a reply: 10 days / 1 s = 864000 pings, far above 1000 steps; 1 h / 4 m = 15
        // pings is fine.
        let reply = "[[steps]]\nassistant = { tokens = 5 }\n";
        let d = doc(&format!(
            "{reply}[[steps]]\nwait = {{ duration = \"10days\", keepalive = \"1s\" }}\n"
        ));
        let e = b.check_document(&d, Path::new("s.toml")).unwrap_err();
        assert_eq!(
            e.place.as_deref(),
            Some("steps[2].wait.keepalive (864000 pings)")
        );
        let d = doc(&format!(
            "{reply}[[steps]]\nwait = {{ duration = \"1h\", keepalive = \"4m\" }}\n"
        ));
        assert!(b.check_document(&d, Path::new("s.toml")).is_ok());
    }

    #[test]
    fn tally_never_wraps() {
        let mut t = Budget::DEFAULT.tally(Path::new("x"));
        t.add_tokens(10, || "a".into()).unwrap();
        let e = t.add_tokens(u64::MAX, || "b".into()).unwrap_err();
        assert!(e.message.contains("more than 2^64"), "{}", e.message);
        assert_eq!(t.tokens(), 10);
    }
}
