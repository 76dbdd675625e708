//! `validate`: replay imported sessions and compare each request with what the provider billed.
//!
//! Every stream of a transcript is replayed under the strategy the harness used (Claude Code:
//! `permission-mode`) against one shared cache model instance (an account's cache is shared by
//! its sessions and subagents), in the order the streams started. Per request the predicted
//! `input_tokens`, `cache_creation_input_tokens` and `cache_read_input_tokens` are set against the
//! recorded ones. Definitions (docs/validation.md): a *break* is a request that reads less than
//! half of the previous request's prompt (recorded and predicted each against their own previous
//! prompt); cost is counted in base-price units (uncached input 1, writes and reads at the
//! model's multipliers), output excluded because Claude Code logs a streaming placeholder there.

use std::sync::Arc;

use crate::cache::{self, CacheOutcome, PriceTable};
use crate::engine::{self, ReplayEnv};
use crate::import::discover::{read_session, SessionFiles};
use crate::import::scenario::SendTime;
use crate::import::{Events, ImportOptions, ImportedScenario, StreamKind, Transcript};
use crate::metrics::RequestRow;
use crate::prompt::{Request, Tokenizer, Ttl};
use crate::strategy::{self, Strategy};

mod error;
mod fork;
pub mod naive;
mod prepare;
mod report;
mod shared;

pub use error::ValidateError;
pub use naive::{NaiveRead, NaiveRule};
pub use prepare::{prepare, Prepared};

/// How the first request of each stream is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstRequest {
    /// Reported, but kept out of the error figures: it may read a prefix an earlier session
    /// wrote, which no replay of this session alone can know.
    Apart,
    /// Counted like every other request.
    Include,
}

/// What the cache holds before a transcript's first request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedPrefix {
    /// A cold cache.
    None,
    /// The leading block the main stream's first request read (cross-session sharing) is cached
    /// before the replay starts: the estimate from the first request.
    Recorded,
    /// As `recorded`, and other sessions of the account keep the tools/system entries warm for
    /// the whole replay (the `anthropic` model's `prefix_kept_warm`): they survive idle gaps.
    KeptWarm,
}

/// Which cache the transcripts of one run share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionCache {
    /// One account's cache: every session on one clock, a session reading what an earlier one
    /// left while it lives (the transcripts are one user's sessions).
    Account,
    /// A cache per transcript (sessions of different accounts).
    Apart,
}

/// Options of a validation run.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// The strategy the harness used, replayed for every stream (Claude Code: `permission-mode`).
    pub strategy: String,
    /// The cache model the streams are replayed against (a registry name).
    pub cache: String,
    /// Whether each stream's first request counts in the error figures.
    pub first_request: FirstRequest,
    /// What the cache holds before a transcript's first request.
    pub shared_prefix: SharedPrefix,
    /// A request is mispredicted when |Δcache_read| exceeds this share of its prompt.
    pub tolerance: f64,
    /// A request breaks the cache when it reads less than this share of the previous prompt.
    pub break_threshold: f64,
    /// Where the replayed events come from (`transcript` unless asked).
    pub events: Events,
    /// Where each stream's TTL class comes from (`--ttl`; see [`crate::import::TtlChoice`]).
    pub ttl: crate::import::TtlChoice,
    /// Whether the transcripts share one account cache (`--sessions`).
    pub sessions: SessionCache,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            strategy: "permission-mode".into(),
            cache: cache::DEFAULT_CACHE.into(),
            first_request: FirstRequest::Apart,
            shared_prefix: SharedPrefix::Recorded,
            tolerance: 0.05,
            break_threshold: 0.5,
            events: Events::Transcript,
            ttl: crate::import::TtlChoice::Auto,
            sessions: SessionCache::Account,
        }
    }
}

/// One request: recorded against predicted.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestCheck {
    /// The transcript file the request was read from.
    pub transcript: String,
    /// The stream it belongs to (`main` or a subagent's name).
    pub stream: String,
    /// 1-based within its stream.
    pub request: usize,
    /// The provider's request id, as the transcript recorded it.
    pub request_id: String,
    /// 1-based transcript line of the request's first record.
    pub line: usize,
    /// The model the provider billed.
    pub model: String,
    /// When the request was sent, in ms after the transcript's first record.
    pub sent_at_ms: u64,
    /// Whether this is its stream's first request (see [`FirstRequest`]).
    pub first_in_stream: bool,
    /// Billed prompt tokens: uncached input plus cache writes plus cache reads.
    pub recorded_prompt: u64,
    /// Billed uncached input tokens.
    pub recorded_input: u64,
    /// Billed cache-write tokens (both TTL classes).
    pub recorded_creation: u64,
    /// Billed cache-read tokens.
    pub recorded_read: u64,
    /// Billed cost in base-price units (output excluded).
    pub recorded_units: f64,
    /// The replay's prompt tokens for the same request.
    pub predicted_prompt: u64,
    /// The replay's uncached input tokens.
    pub predicted_input: u64,
    /// The replay's cache-write tokens (both TTL classes).
    pub predicted_creation: u64,
    /// The replay's cache-read tokens.
    pub predicted_read: u64,
    /// The replay's cost in base-price units (output excluded).
    pub predicted_units: f64,
    /// The billed read is below the break threshold of the previous billed prompt.
    pub recorded_break: bool,
    /// The predicted read is below the break threshold of the previous predicted prompt.
    pub predicted_break: bool,
    /// Where and why the model's reuse stopped (empty when it read the whole previous prompt).
    pub reason: String,
    /// Events recognised before this request (compaction, early-block edit, tool change).
    pub events: String,
    /// The naive baseline's read ([`naive`]: the previous prompt of the stream while the TTL
    /// lives).
    pub naive_read: u64,
    /// The naive baseline's writes (all that it does not read, where writes are billed).
    pub naive_creation: u64,
    /// The naive baseline's cost in base-price units.
    pub naive_units: f64,
    /// The naive baseline's break verdict (its read below half of the previous recorded prompt).
    pub naive_break: bool,
}

impl RequestCheck {
    fn read_error(&self) -> f64 {
        ratio(
            self.predicted_read.abs_diff(self.recorded_read),
            self.recorded_prompt,
        )
    }
    fn creation_error(&self) -> f64 {
        ratio(
            self.predicted_creation.abs_diff(self.recorded_creation),
            self.recorded_prompt,
        )
    }
    fn naive_read_error(&self) -> f64 {
        ratio(
            self.naive_read.abs_diff(self.recorded_read),
            self.recorded_prompt,
        )
    }
    fn naive_creation_error(&self) -> f64 {
        ratio(
            self.naive_creation.abs_diff(self.recorded_creation),
            self.recorded_prompt,
        )
    }
    fn prompt_error(&self) -> f64 {
        ratio(
            self.predicted_prompt.abs_diff(self.recorded_prompt),
            self.recorded_prompt,
        )
    }
    /// Mispredicted: the read is off by more than the tolerance, or the break verdicts differ.
    pub fn mispredicted(&self, tolerance: f64) -> bool {
        self.read_error() > tolerance || self.recorded_break != self.predicted_break
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Error figures of a set of requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// What the set is (`transcript / stream`, `transcript (all streams)`, `overall`).
    pub label: String,
    /// Requests in the set.
    pub requests: usize,
    /// Median of |predicted - recorded| prompt tokens over the recorded prompt.
    pub median_prompt_error: f64,
    /// Largest such prompt error in the set.
    pub worst_prompt_error: f64,
    /// Mean of |Δcache_read| over the recorded prompt.
    pub mean_read_error: f64,
    /// Mean of |Δcache_creation| over the recorded prompt.
    pub mean_creation_error: f64,
    /// Requests the billed usage shows as breaks.
    pub recorded_breaks: usize,
    /// Requests the replay predicts as breaks.
    pub predicted_breaks: usize,
    /// Predicted breaks that were also recorded.
    pub true_breaks: usize,
    /// None when no break was predicted.
    pub precision: Option<f64>,
    /// None when no break was recorded.
    pub recall: Option<f64>,
    /// Billed cost of the set in base-price units.
    pub recorded_units: f64,
    /// Predicted cost of the set in base-price units.
    pub predicted_units: f64,
    /// Requests off by more than the tolerance or with the wrong break verdict.
    pub mispredicted: usize,
    /// The same figures for the naive baseline over the same requests.
    pub naive: Baseline,
}

/// The naive baseline's figures over a set of requests (its prompts are the recorded ones).
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// Mean of |Δcache_read| over the recorded prompt.
    pub mean_read_error: f64,
    /// Mean of |Δcache_creation| over the recorded prompt.
    pub mean_creation_error: f64,
    /// Requests the baseline calls breaks.
    pub predicted_breaks: usize,
    /// Of those, the ones also recorded.
    pub true_breaks: usize,
    /// None when the baseline called no break.
    pub precision: Option<f64>,
    /// None when no break was recorded.
    pub recall: Option<f64>,
    /// The baseline's cost in base-price units.
    pub units: f64,
}

/// Mean of `f` over `checks` (0 for none).
fn mean_of(checks: &[&RequestCheck], f: impl Fn(&RequestCheck) -> f64) -> f64 {
    if checks.is_empty() {
        0.0
    } else {
        checks.iter().map(|c| f(c)).sum::<f64>() / checks.len() as f64
    }
}

/// (predicted, true, precision, recall) of one break verdict against the recorded one.
fn break_scores(
    checks: &[&RequestCheck],
    predicted: impl Fn(&RequestCheck) -> bool,
) -> (usize, usize, Option<f64>, Option<f64>) {
    let rec = checks.iter().filter(|c| c.recorded_break).count();
    let pred = checks.iter().filter(|c| predicted(c)).count();
    let tp = checks
        .iter()
        .filter(|c| c.recorded_break && predicted(c))
        .count();
    (
        pred,
        tp,
        (pred > 0).then(|| tp as f64 / pred as f64),
        (rec > 0).then(|| tp as f64 / rec as f64),
    )
}

impl Stats {
    /// The figures of `checks` under `label`; `tolerance` is the share of the prompt
    /// beyond which a read counts as mispredicted.
    pub fn of(label: &str, checks: &[&RequestCheck], tolerance: f64) -> Stats {
        let n = checks.len();
        let mut prompt_err: Vec<f64> = checks.iter().map(|c| c.prompt_error()).collect();
        prompt_err.sort_by(f64::total_cmp);
        let median = match n {
            0 => 0.0,
            _ if n % 2 == 1 => prompt_err[n / 2],
            _ => (prompt_err[n / 2 - 1] + prompt_err[n / 2]) / 2.0,
        };
        let (pred, tp, precision, recall) = break_scores(checks, |c| c.predicted_break);
        let (n_pred, n_tp, n_precision, n_recall) = break_scores(checks, |c| c.naive_break);
        Stats {
            label: label.to_string(),
            requests: n,
            median_prompt_error: median,
            worst_prompt_error: prompt_err.last().copied().unwrap_or(0.0),
            mean_read_error: mean_of(checks, RequestCheck::read_error),
            mean_creation_error: mean_of(checks, RequestCheck::creation_error),
            recorded_breaks: checks.iter().filter(|c| c.recorded_break).count(),
            predicted_breaks: pred,
            true_breaks: tp,
            precision,
            recall,
            recorded_units: checks.iter().map(|c| c.recorded_units).sum(),
            predicted_units: checks.iter().map(|c| c.predicted_units).sum(),
            mispredicted: checks.iter().filter(|c| c.mispredicted(tolerance)).count(),
            naive: Baseline {
                mean_read_error: mean_of(checks, RequestCheck::naive_read_error),
                mean_creation_error: mean_of(checks, RequestCheck::naive_creation_error),
                predicted_breaks: n_pred,
                true_breaks: n_tp,
                precision: n_precision,
                recall: n_recall,
                units: checks.iter().map(|c| c.naive_units).sum(),
            },
        }
    }

    /// (predicted - recorded) / recorded cost in base-price units.
    pub fn cost_error(&self) -> f64 {
        relative(self.predicted_units, self.recorded_units)
    }

    /// The naive baseline's cost error, likewise.
    pub fn naive_cost_error(&self) -> f64 {
        relative(self.naive.units, self.recorded_units)
    }
}

fn relative(predicted: f64, recorded: f64) -> f64 {
    if recorded == 0.0 {
        0.0
    } else {
        (predicted - recorded) / recorded
    }
}

/// The outcome of validating one or more transcripts.
#[derive(Debug, Clone)]
pub struct Validation {
    /// The options the run used.
    pub options: ValidateOptions,
    /// Every request of every transcript scored, recorded against predicted, in replay order.
    pub checks: Vec<RequestCheck>,
    /// Per transcript: lines read, records skipped (with reasons), import notes.
    pub imports: Vec<ImportSummary>,
    /// Recorded breaks within the TTL with no event the transcript shows: what a replay from
    /// the transcript cannot predict. Listed, never fixed up.
    pub unexplained: Vec<Unexplained>,
    /// Requests whose billed model is not the one the transcript's mode implies.
    pub model_findings: Vec<ModelFinding>,
    /// Transcripts of a several-transcript run that could not be imported or replayed, with why:
    /// the others are scored.
    pub skipped: Vec<Skipped>,
}

/// A transcript left out of a run, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// Its file.
    pub transcript: String,
    /// What failed, with the place where the importer or loader gave one.
    pub reason: String,
}

/// A recorded break the transcript gives no reason for.
#[derive(Debug, Clone, PartialEq)]
pub struct Unexplained {
    /// The transcript file.
    pub transcript: String,
    /// The stream (`main` or a subagent's name).
    pub stream: String,
    /// 1-based within its stream.
    pub request: usize,
    /// The provider's request id.
    pub request_id: String,
    /// 1-based transcript line of the request's first record.
    pub line: usize,
    /// Idle time since the previous response of the stream finished (ms).
    pub gap_ms: u64,
    /// The previous request's billed prompt tokens.
    pub previous_prompt: u64,
    /// The tokens this request was billed as cache reads.
    pub recorded_read: u64,
}

/// A request served by another model than the session's mode implies: in an opusplan session
/// (plan-mode requests on Opus, the others on Sonnet), a request that did not switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFinding {
    /// The transcript file.
    pub transcript: String,
    /// The stream (`main` for an opusplan session's switches).
    pub stream: String,
    /// The provider's request id.
    pub request_id: String,
    /// 1-based transcript line of the request's first record.
    pub line: usize,
    /// The session's mode when the request was sent.
    pub mode: crate::plan_mode::Mode,
    /// The model the provider billed.
    pub model: String,
    /// The model family that mode implies (`opus` in plan mode, `sonnet` outside).
    pub expected: &'static str,
}

/// What the importer made of one transcript.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    /// The transcript file.
    pub transcript: String,
    /// JSONL lines read.
    pub lines: usize,
    /// Records skipped, each with its line and why.
    pub skipped: Vec<String>,
    /// Streams imported (the main one and each subagent).
    pub streams: usize,
    /// Billed requests over all streams.
    pub requests: usize,
    /// The main stream's TTL class and where it came from (`5m (...)`, or `unknown (...)`).
    pub ttl: String,
    /// Tokens of the leading block the main stream's first request read (0 for none).
    pub shared_prefix: u64,
    /// The importer's notes, each prefixed with its stream.
    pub notes: Vec<String>,
    /// Events placed from billed cache reads (`billed` mode; 0 in `transcript` mode).
    pub inferred: usize,
}

/// Cost of a request in base-price units with the model's multipliers.
fn units(prices: &PriceTable, model: &str, input: u64, c5m: u64, c1h: u64, read: u64) -> f64 {
    let (w5, w1, r) = prices
        .get(model)
        .map_or((1.25, 2.0, 0.1), |p| (p.write_5m, p.write_1h, p.read));
    input as f64 + c5m as f64 * w5 + c1h as f64 * w1 + read as f64 * r
}

/// Imports, replays and compares every transcript. With several transcripts (one account's
/// sessions), a transcript that cannot be imported or replayed is listed in
/// [`Validation::skipped`] and the others are scored; with one, it is the error.
pub fn validate(
    transcripts: &[Transcript],
    opts: &ValidateOptions,
    env: &ReplayEnv,
) -> Result<Validation, ValidateError> {
    let strategy = strategy::parse_first(&opts.strategy)?;
    let mut out = Validation {
        options: opts.clone(),
        checks: Vec::new(),
        imports: Vec::new(),
        unexplained: Vec::new(),
        model_findings: Vec::new(),
        skipped: Vec::new(),
    };
    let tokenizer = Arc::new(Tokenizer::new(crate::prompt::Encoding::O200kBase));
    let import_opts = ImportOptions {
        events: opts.events,
        ttl: opts.ttl,
        ..ImportOptions::default()
    };
    // 1. Each transcript imported, and each stream's requests as the strategy renders them.
    let mut runs: Vec<Run> = Vec::new();
    for t in transcripts {
        let run = check_transcript(t)
            .and_then(|()| prepare(t, &import_opts, &env.caches, &tokenizer))
            .and_then(|p| record(t, p, strategy.as_ref(), env));
        match run {
            Ok(run) => runs.push(run),
            Err(e) if transcripts.len() > 1 => out.skipped.push(Skipped {
                transcript: t.source.clone(),
                reason: e.to_string(),
            }),
            Err(e) => return Err(e),
        }
    }
    if runs.is_empty() {
        return Err(ValidateError::NoneReplayed {
            skipped: out.skipped.len(),
            first: out
                .skipped
                .first()
                .map_or(String::new(), |s| format!("{}: {}", s.transcript, s.reason)),
        });
    }
    // 2. Every stream of every transcript against the one account cache, in send-time order.
    let outcomes = match opts.sessions {
        SessionCache::Account => {
            shared::replay(&runs, opts, strategy.as_ref(), &tokenizer, &env.prices)?
        }
        SessionCache::Apart => {
            let mut all = Vec::with_capacity(runs.len());
            for run in &runs {
                let one = std::slice::from_ref(run);
                all.extend(shared::replay(
                    one,
                    opts,
                    strategy.as_ref(),
                    &tokenizer,
                    &env.prices,
                )?);
            }
            all
        }
    };
    // 3. Each stream priced with the outcomes the shared cache gave.
    for (run, outcomes) in runs.iter().zip(outcomes) {
        out.imports
            .push(import_summary(run.transcript, &run.prepared.imported));
        out.model_findings
            .extend(model_findings(&run.transcript.name, &run.prepared.imported));
        score(run, outcomes, opts, env, strategy.as_ref(), &mut out)?;
    }
    Ok(out)
}

/// One transcript ready for the shared cache: imported, and its streams' requests recorded.
struct Run<'t> {
    transcript: &'t Transcript,
    prepared: Prepared,
    /// Each stream's requests as the strategy renders them, with their recorded times.
    requests: Vec<Vec<(Request, SendTime)>>,
}

fn record<'t>(
    t: &'t Transcript,
    prepared: Prepared,
    strategy: &dyn Strategy,
    env: &ReplayEnv,
) -> Result<Run<'t>, ValidateError> {
    let mut requests = Vec::with_capacity(prepared.sessions.len());
    for (imp, session) in prepared.imported.iter().zip(&prepared.sessions) {
        let mut rec = Recorder {
            stream: stream_name(imp),
            timeline: &imp.timeline,
            requests: Vec::new(),
        };
        engine::replay(session, strategy, &mut rec, env).map_err(|source| {
            ValidateError::Stream {
                stream: imp.stream.clone(),
                source,
            }
        })?;
        requests.push(rec.requests);
    }
    Ok(Run {
        transcript: t,
        prepared,
        requests,
    })
}

fn import_summary(t: &Transcript, imported: &[ImportedScenario]) -> ImportSummary {
    let main = imported.iter().find(|s| s.kind == StreamKind::Main);
    ImportSummary {
        transcript: t.name.clone(),
        lines: t.lines,
        skipped: t.skipped.iter().map(|s| s.to_string()).collect(),
        streams: imported.len(),
        requests: imported.iter().map(|s| s.requests.len()).sum(),
        ttl: main.map_or("unknown".into(), |m| match m.ttl {
            Some(t) => format!("{} ({})", t.as_str(), m.ttl_source),
            None => format!("unknown ({}; replayed as 5m)", m.ttl_source),
        }),
        shared_prefix: main.map_or(0, |m| m.shared_prefix),
        notes: imported
            .iter()
            .flat_map(|s| s.notes.iter().map(move |n| format!("{}: {n}", s.stream)))
            .collect(),
        inferred: imported.iter().map(|s| s.inferred_steps.len()).sum(),
    }
}

/// Prices each stream of `run` with the outcomes the shared cache gave and compares it with the
/// bill.
fn score(
    run: &Run,
    outcomes: Vec<Vec<CacheOutcome>>,
    opts: &ValidateOptions,
    env: &ReplayEnv,
    strategy: &dyn Strategy,
    out: &mut Validation,
) -> Result<(), ValidateError> {
    let p = &run.prepared;
    let cache = cache::build_with(&opts.cache, &env.prices, &p.config)?;
    for ((imp, session), outcomes) in p.imported.iter().zip(&p.sessions).zip(outcomes) {
        let mut play = Playback {
            name: cache.name().to_string(),
            charges_writes: cache.charges_writes(),
            outcomes: outcomes.into_iter(),
        };
        let replay = engine::replay(session, strategy, &mut play, env)?;
        // Only replies stand for recorded requests (imported scenarios send no compaction
        // request and no keep-alive ping, whose rows would be of another kind).
        let rows: Vec<RequestRow> = replay
            .rows
            .into_iter()
            .filter(RequestRow::is_reply)
            .collect();
        let ttl = imp.ttl.unwrap_or(Ttl::FiveMinutes);
        let naive = NaiveRule::for_stream(&opts.cache, &p.config, ttl);
        let checks = compare(&run.transcript.name, imp, &rows, &env.prices, opts, &naive);
        out.unexplained
            .extend(unexplained(&checks, imp, ttl.millis()));
        out.checks.extend(checks);
    }
    Ok(())
}

/// Validates one session (its main transcript and its subagents) against one account cache: the
/// entry point for callers that discovered sessions on disk ([`crate::import::discover`]).
pub fn validate_session(
    files: &SessionFiles,
    opts: &ValidateOptions,
    env: &ReplayEnv,
) -> Result<Validation, ValidateError> {
    let t = read_session(files)?;
    validate(std::slice::from_ref(&t), opts, env)
}

/// A transcript with no request to compare is bad input (an empty file, a file of another kind,
/// garbage), never a validation of zero requests.
fn check_transcript(t: &Transcript) -> Result<(), ValidateError> {
    if t.streams.iter().any(|s| s.requests().next().is_some()) {
        return Ok(crate::import::check_sizes(t)?);
    }
    let why = t
        .skipped
        .first()
        .map(|s| format!("; first skipped record: {s}"))
        .unwrap_or_default();
    Err(ValidateError::NoUsage {
        source_name: if t.source.is_empty() {
            &t.name
        } else {
            &t.source
        }
        .clone(),
        lines: t.lines,
        not_interpreted: t.skipped.len(),
        first_skipped: why,
    })
}

/// The engine names every replayed scenario's stream `main`; in the account's cache each stream
/// of the session keeps its own name (subagent streams get the subagent TTL and their own state).
fn stream_name(imp: &ImportedScenario) -> String {
    match imp.kind {
        StreamKind::Main => "main".to_string(),
        StreamKind::Agent => imp.stream.clone(),
    }
}

/// Collects a stream's requests, stamped with their recorded send times, without caching.
struct Recorder<'a> {
    stream: String,
    timeline: &'a [SendTime],
    requests: Vec<(Request, SendTime)>,
}

impl cache::CacheModel for Recorder<'_> {
    fn name(&self) -> &str {
        "recorder"
    }
    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let at = self
            .timeline
            .get(self.requests.len())
            .copied()
            .unwrap_or(SendTime {
                sent_ms: req.sent_at_ms,
                visible_ms: req.sent_at_ms,
                finished_ms: req.sent_at_ms,
            });
        let mut r = req.clone();
        r.stream = self.stream.clone();
        r.sent_at_ms = at.sent_ms;
        self.requests.push((r, at));
        CacheOutcome::default()
    }
    fn store(&mut self, _: &Request, _: &CacheOutcome, _: u64, _: u64) {}
}

/// Answers a stream's lookups with the outcomes the shared cache gave, in order.
struct Playback {
    name: String,
    charges_writes: bool,
    outcomes: std::vec::IntoIter<CacheOutcome>,
}

impl cache::CacheModel for Playback {
    fn name(&self) -> &str {
        &self.name
    }
    fn lookup(&mut self, _: &Request) -> CacheOutcome {
        self.outcomes.next().unwrap_or_default()
    }
    fn store(&mut self, _: &Request, _: &CacheOutcome, _: u64, _: u64) {}
    fn charges_writes(&self) -> bool {
        self.charges_writes
    }
}

/// Recorded breaks within the TTL with no recognised event before them.
fn unexplained(checks: &[RequestCheck], imp: &ImportedScenario, ttl_ms: u64) -> Vec<Unexplained> {
    checks
        .windows(2)
        .zip(imp.requests.windows(2))
        .filter_map(|(w, r)| {
            let (prev, c, rec) = (&w[0], &w[1], &r[1]);
            // Idle time since the previous response of the stream finished (the TTL's clock).
            let gap_ms = rec.sent_at_ms.saturating_sub(r[0].finished_at_ms);
            // Events placed from billed reads (`billed` mode) are not the transcript's, and an
            // unlogged request refreshes the cache rather than breaking it.
            let seen = rec.events.iter().any(|e| e.explains_break());
            (c.recorded_break && gap_ms < ttl_ms && !seen).then(|| Unexplained {
                transcript: c.transcript.clone(),
                stream: c.stream.clone(),
                request: c.request,
                request_id: c.request_id.clone(),
                line: c.line,
                gap_ms,
                previous_prompt: prev.recorded_prompt,
                recorded_read: c.recorded_read,
            })
        })
        .collect()
}

/// In a session whose plan-mode requests ran on Opus and whose other requests ran on Sonnet
/// (Claude Code's `opusplan`), the requests that ran on the other model than their mode implies.
fn model_findings(transcript: &str, imported: &[ImportedScenario]) -> Vec<ModelFinding> {
    use crate::plan_mode::Mode;
    let Some(main) = imported.iter().find(|s| s.kind == StreamKind::Main) else {
        return Vec::new();
    };
    let family = |m: &str| {
        if m.contains("opus") {
            "opus"
        } else if m.contains("sonnet") {
            "sonnet"
        } else {
            "other"
        }
    };
    let opus_in_plan = main
        .requests
        .iter()
        .any(|r| r.mode == Mode::Plan && family(&r.model) == "opus");
    let sonnet_outside = main
        .requests
        .iter()
        .any(|r| r.mode != Mode::Plan && family(&r.model) == "sonnet");
    if !(opus_in_plan && sonnet_outside) {
        return Vec::new();
    }
    main.requests
        .iter()
        .filter_map(|r| {
            let expected = if r.mode == Mode::Plan {
                "opus"
            } else {
                "sonnet"
            };
            (family(&r.model) != expected).then(|| ModelFinding {
                transcript: transcript.to_string(),
                stream: main.stream.clone(),
                request_id: r.request_id.clone(),
                line: r.line,
                mode: r.mode,
                model: r.model.clone(),
                expected,
            })
        })
        .collect()
}

/// The cache parameters with the TTLs the harness asked for (each stream's `ttl`, see
/// [`crate::import::TtlChoice`]): every stream writes its own class at its system and message
/// breakpoints (no Claude Code request writes two classes); the main stream's class is the
/// default for streams without one.
pub fn harness_config(
    base: &cache::CacheConfig,
    imported: &[ImportedScenario],
) -> cache::CacheConfig {
    let message = imported
        .iter()
        .find(|s| s.kind == StreamKind::Main)
        .and_then(|s| s.ttl)
        .or_else(|| imported.iter().find_map(|s| s.ttl))
        .unwrap_or(Ttl::FiveMinutes);
    let mut c = base.clone();
    if let Some(agent) = imported
        .iter()
        .filter(|s| s.kind == StreamKind::Agent)
        .find_map(|s| s.ttl)
    {
        c.anthropic.subagent_message_ttl = Some(agent);
    }
    c.anthropic.message_ttl = message;
    c.anthropic.system_ttl = message;
    // Each stream writes its own class, at its system and message breakpoints alike.
    c.anthropic.stream_ttls = imported
        .iter()
        .filter_map(|s| s.ttl.map(|t| (stream_name(s), t)))
        .collect();
    c
}

fn compare(
    transcript: &str,
    imp: &ImportedScenario,
    rows: &[RequestRow],
    prices: &PriceTable,
    opts: &ValidateOptions,
    naive: &NaiveRule,
) -> Vec<RequestCheck> {
    let mut out: Vec<RequestCheck> = Vec::new();
    let naive_reads = naive.reads(&imp.requests);
    for (i, (rec, row)) in imp.requests.iter().zip(rows).enumerate() {
        let nv = naive_reads[i];
        let u = &rec.usage;
        let (c5, c1) = u.creation_split();
        // Each request is priced at the model it ran on (the scenario's where that is unknown).
        let own = crate::import::scenario::model_family(&rec.model);
        let model = if prices.get(&own).is_some() {
            &own
        } else {
            &imp.scenario.model
        };
        let prev = out.last();
        let recorded_break = prev.is_some_and(|p| {
            (u.cache_read_input_tokens as f64) < opts.break_threshold * p.recorded_prompt as f64
        });
        let predicted_break = prev.is_some_and(|p| {
            (row.cache_read_input_tokens as f64) < opts.break_threshold * p.predicted_prompt as f64
        });
        let naive_break = prev
            .is_some_and(|p| (nv.read as f64) < opts.break_threshold * p.recorded_prompt as f64);
        let (n5, n1) = match naive.writes {
            Some(Ttl::OneHour) => (0, nv.creation),
            _ => (nv.creation, 0),
        };
        let naive_input = u.prompt_tokens() - nv.read - nv.creation;
        out.push(RequestCheck {
            transcript: transcript.to_string(),
            stream: imp.stream.clone(),
            request: i + 1,
            request_id: rec.request_id.clone(),
            line: rec.line,
            model: rec.model.clone(),
            sent_at_ms: rec.sent_at_ms,
            first_in_stream: i == 0,
            recorded_prompt: u.prompt_tokens(),
            recorded_input: u.input_tokens,
            recorded_creation: u.cache_creation_input_tokens,
            recorded_read: u.cache_read_input_tokens,
            recorded_units: units(
                prices,
                model,
                u.input_tokens,
                c5,
                c1,
                u.cache_read_input_tokens,
            ),
            predicted_prompt: row.prompt_tokens,
            predicted_input: row.input_tokens,
            predicted_creation: row.cache_creation_input_tokens,
            predicted_read: row.cache_read_input_tokens,
            predicted_units: units(
                prices,
                model,
                row.input_tokens,
                row.cache_creation_5m_tokens,
                row.cache_creation_1h_tokens,
                row.cache_read_input_tokens,
            ),
            recorded_break,
            predicted_break,
            reason: row.break_text(),
            events: rec
                .events
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
            naive_read: nv.read,
            naive_creation: nv.creation,
            naive_units: units(prices, model, naive_input, n5, n1, nv.read),
            naive_break,
        });
    }
    out
}

impl Validation {
    /// The requests that count in the error figures.
    fn counted<'a>(&'a self, pick: impl Fn(&RequestCheck) -> bool + 'a) -> Vec<&'a RequestCheck> {
        self.checks
            .iter()
            .filter(|c| self.options.first_request == FirstRequest::Include || !c.first_in_stream)
            .filter(|c| pick(c))
            .collect()
    }

    /// Figures per stream (in replay order), then per transcript, then overall.
    pub fn stats(&self) -> Vec<Stats> {
        let tol = self.options.tolerance;
        let mut keys: Vec<(String, String)> = Vec::new();
        for c in &self.checks {
            let k = (c.transcript.clone(), c.stream.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let mut out: Vec<Stats> = keys
            .iter()
            .map(|(t, s)| {
                Stats::of(
                    &format!("{t} / {s}"),
                    &self.counted(|c| &c.transcript == t && &c.stream == s),
                    tol,
                )
            })
            .collect();
        let mut transcripts: Vec<&String> = keys.iter().map(|(t, _)| t).collect();
        transcripts.dedup();
        for t in transcripts {
            out.push(Stats::of(
                &format!("{t} (all streams)"),
                &self.counted(|c| &c.transcript == t),
                tol,
            ));
        }
        out.push(Stats::of("overall", &self.counted(|_| true), tol));
        out
    }
}
