//! `account`: every session of an account, replayed on one account timeline and added up by
//! day, project and model, with the what-if under other strategies, TTLs and keep-alives.
//!
//! Three phases, so the work that can run in parallel does:
//! 1. **read** every discovered session in parallel ([`load`]);
//! 2. **place** them on the account timeline in send-time order ([`timeline`]): which sessions
//!    start with the account's leading tools/system block still cached (cheap, sequential);
//! 3. **replay** each session in parallel under the harness's own setting and every what-if
//!    setting ([`replay`]), each on its own cache instance seeded with that leading block when
//!    the timeline says it is alive.
//!
//! Predictions use the transcript's text, sizes and send times and the TTL the harness wrote
//! with; the billed cache reads and writes are only shown beside them (the rule `validate`
//! follows). With [`Sharing::None`] every session starts cold and the account's figures are the
//! sums of `validate --shared-prefix none` over its sessions.

pub mod aggregate;
pub mod billed;
pub mod chart;
mod error;
pub mod figures;
pub mod load;
pub mod locate;
pub mod replay;
pub mod report;
pub mod select;
pub mod synthetic;
pub mod table;
pub mod timeline;
pub mod usage;
pub mod views;
pub mod whatif;

use std::collections::BTreeSet;
use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::ReplayEnv;
use crate::import::discover::{SessionFiles, TranscriptKind};
use crate::import::scenario::model_family;
use crate::prompt::{Encoding, Tokenizer, Ttl};
use crate::strategy;

pub use error::AccountError;
pub use figures::{Counters, RequestFigures};
pub use replay::{Keepalive, Setting};
pub use whatif::WhatIf;

/// How sessions share the account's leading block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// A session starts with the leading block cached when the timeline says an earlier
    /// session's request left it alive.
    Timeline,
    /// Every session starts cold (the sum of lone replays).
    None,
}

/// Options of an account run.
#[derive(Debug, Clone)]
pub struct AccountOptions {
    /// Cache model for Claude Code sessions (Codex sessions use `openai`).
    pub cache: String,
    /// The strategy the harness runs (`permission-mode` for Claude Code).
    pub strategy: String,
    /// How sessions share the account's leading block.
    pub sharing: Sharing,
    /// The what-if settings (the harness's own setting is always replayed first).
    pub whatif: Vec<Setting>,
    /// A break reads less than this share of the previous prompt (as in `validate`).
    pub break_threshold: f64,
    /// Which requests count (days in a zone, one project); the others still place the
    /// account's leading block on the timeline but are not replayed or added up.
    pub selection: select::Selection,
    /// `false`: the billed figures alone, no import and no replay (`--billed-only`).
    pub predict: bool,
}

impl Default for AccountOptions {
    fn default() -> Self {
        AccountOptions {
            cache: crate::cache::DEFAULT_CACHE.into(),
            strategy: "permission-mode".into(),
            sharing: Sharing::Timeline,
            whatif: Vec::new(),
            break_threshold: 0.5,
            selection: select::Selection::default(),
            predict: true,
        }
    }
}

/// One session of the account under the harness's own setting.
#[derive(Debug, Clone)]
pub struct SessionOutcome {
    /// Its transcript files (main and subagents) and their kind.
    pub files: SessionFiles,
    /// Size of those files.
    pub bytes: u64,
    /// The session whose request left the leading block alive at this one's start.
    pub warm_from: Option<String>,
    /// The account's requests kept the leading block alive for the whole session.
    pub kept_warm: bool,
    /// Every request of every stream, billed beside predicted, in stream order.
    pub requests: Vec<RequestFigures>,
    /// Transcript records the importer could not interpret.
    pub skipped_records: usize,
}

/// A session that could not be read or replayed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The session's label (its main file's path).
    pub session: String,
    /// Why, starting with the file and line it points at when one is known
    /// (`path/s.jsonl:12: ...`).
    pub message: String,
}

/// The whole account.
#[derive(Debug, Clone)]
pub struct Account {
    /// The options the run used.
    pub options: AccountOptions,
    /// In order of their first request.
    pub sessions: Vec<SessionOutcome>,
    /// Sessions that could not be read or replayed, with why.
    pub failures: Vec<Failure>,
    /// The harness's setting first, then every what-if setting, over the sessions all of them
    /// replayed.
    pub whatif: Vec<WhatIf>,
    /// Sessions left out of the what-if because some setting could not replay them.
    pub whatif_excluded: Vec<Failure>,
    /// Files of the counted sessions.
    pub files: usize,
    /// Bytes of the counted sessions.
    pub bytes: u64,
    /// Whether the sessions were replayed (`false`: `--billed-only`, predicted counters zero).
    pub predicted: bool,
}

fn label(f: &SessionFiles) -> String {
    f.main
        .as_ref()
        .or(f.subagents.first())
        .map_or_else(|| f.session_id.clone(), |p| p.display().to_string())
}

/// Sessions read in parallel, the ones with at least one request kept (in timeline order: by
/// first request, then label), with their request times; the rest as failures.
fn read_all(
    sessions: &[SessionFiles],
    billed_only: bool,
    progress: &indicatif::ProgressBar,
) -> (Vec<load::LoadedSession>, Vec<Vec<u64>>, Vec<Failure>) {
    let read: Vec<Result<load::LoadedSession, Failure>> = sessions
        .par_iter()
        .map(|f| {
            let r = if billed_only {
                load::load_billed(f)
            } else {
                load::load(f)
            };
            let r = r.map_err(|e| Failure {
                session: label(f),
                message: e.to_string(),
            });
            progress.inc(1);
            r
        })
        .collect();
    let mut failures = Vec::new();
    let mut loaded = Vec::new();
    for r in read {
        match r {
            Ok(l)
                if l.transcript
                    .streams
                    .iter()
                    .any(|s| s.requests().next().is_some()) =>
            {
                loaded.push(l)
            }
            Ok(l) => failures.push(Failure {
                session: label(&l.files),
                message: format!(
                    "{}: no API request with usage in the transcript",
                    label(&l.files)
                ),
            }),
            Err(e) => failures.push(e),
        }
    }
    let mut keyed: Vec<(Vec<u64>, load::LoadedSession)> =
        loaded.into_iter().map(|l| (l.request_times(), l)).collect();
    keyed.sort_by(|(a, x), (b, y)| (a[0], label(&x.files)).cmp(&(b[0], label(&y.files))));
    let (times, loaded) = keyed.into_iter().unzip();
    (loaded, times, failures)
}

/// One TTL's placement: the TTL (`None`: each session's own), warm-from per session, kept warm
/// per session.
type Placement = (Option<Ttl>, Vec<Option<usize>>, Vec<bool>);

/// Where each session stands on the account timeline under each TTL in use.
struct Placed {
    /// (what-if TTL or `None` for each session's own, warm-from per session, kept warm per
    /// session).
    by_ttl: Vec<Placement>,
}

impl Placed {
    fn new(loaded: &[load::LoadedSession], times: &[Vec<u64>], opts: &AccountOptions) -> Placed {
        let keys: Vec<String> = loaded
            .iter()
            .map(|l| {
                let model = l
                    .transcript
                    .streams
                    .iter()
                    .flat_map(|s| s.requests())
                    .min_by_key(|r| r.first_at_ms)
                    .map_or(String::new(), |r| model_family(&r.model));
                format!("{:?}/{model}", l.files.kind)
            })
            .collect();
        // The TTL the harness asked for, from what the transcript says of the harness (its
        // version), never from the billed write classes: those are what the replay is scored on.
        let own_ttl: Vec<Ttl> = loaded
            .iter()
            .map(|l| {
                l.transcript
                    .streams
                    .iter()
                    .find(|s| s.kind == crate::import::StreamKind::Main)
                    .or_else(|| l.transcript.streams.first())
                    .and_then(|s| crate::import::harness_ttl(s.version.as_deref(), s.kind))
                    .unwrap_or(Ttl::FiveMinutes)
            })
            .collect();
        let ttls: BTreeSet<Option<Ttl>> = std::iter::once(None)
            .chain(opts.whatif.iter().map(|s| s.ttl))
            .collect();
        let by_ttl = ttls
            .into_iter()
            .map(|ttl| match opts.sharing {
                Sharing::None => (ttl, vec![None; loaded.len()], vec![false; loaded.len()]),
                Sharing::Timeline => {
                    let placements: Vec<timeline::Placement> = (0..loaded.len())
                        .map(|i| timeline::Placement {
                            key: keys[i].clone(),
                            times: times[i].clone(),
                            ttl_ms: ttl.unwrap_or(own_ttl[i]).millis(),
                        })
                        .collect();
                    let w = timeline::warm_starts(&placements);
                    let k = timeline::kept_warm(&placements, &w);
                    (ttl, w, k)
                }
            })
            .collect();
        Placed { by_ttl }
    }

    fn warm(&self, ttl: Option<Ttl>, i: usize) -> Option<usize> {
        self.by_ttl
            .iter()
            .find(|(t, _, _)| *t == ttl)
            .and_then(|(_, w, _)| w[i])
    }

    fn kept(&self, ttl: Option<Ttl>, i: usize) -> bool {
        self.by_ttl
            .iter()
            .find(|(t, _, _)| *t == ttl)
            .is_some_and(|(_, _, k)| k[i])
    }

    fn leading(&self, ttl: Option<Ttl>, i: usize) -> replay::LeadingBlock {
        match (self.warm(ttl, i), self.kept(ttl, i)) {
            (None, _) => replay::LeadingBlock::Cold,
            (Some(_), false) => replay::LeadingBlock::Warm,
            (Some(_), true) => replay::LeadingBlock::KeptWarm,
        }
    }
}

/// One session's replays: the harness's setting, then the what-if settings (or why some
/// what-if setting could not replay it).
type Replayed = (
    Vec<RequestFigures>,
    Result<Vec<replay::SessionRun>, AccountError>,
);

fn replay_one(
    l: &load::LoadedSession,
    i: usize,
    placed: &Placed,
    opts: &AccountOptions,
    env: &ReplayEnv,
    tokenizer: &Arc<Tokenizer>,
) -> Result<Replayed, AccountError> {
    let cache = match l.files.kind {
        TranscriptKind::ClaudeCode => opts.cache.as_str(),
        TranscriptKind::Codex => "openai",
    };
    // Sessions with keep-alive pings, built once per keep-alive (the what-if grid repeats each
    // one under every strategy and TTL); recordings once per strategy and keep-alive (a TTL
    // only changes the cache), and a recording equal to an earlier one replaced by it; replays
    // once per recording, TTL and leading block (equal inputs give equal outcomes).
    let mut pinged: Vec<(replay::Keepalive, Vec<crate::scenario::Session>)> = Vec::new();
    let mut recordings: Vec<replay::Recorded> = Vec::new();
    let mut recorded: Vec<((String, Option<replay::Keepalive>), usize)> = Vec::new();
    type RunKey = (usize, Option<Ttl>, replay::LeadingBlock, bool);
    let mut done: Vec<(RunKey, replay::SessionRun)> = Vec::new();
    let mut run_one = |p: &replay::Prepared, s: &Setting, detail: bool| {
        let strat = strategy::parse_first(&s.strategy)?;
        let key = (s.strategy.clone(), s.keepalive);
        let at = match recorded.iter().find(|(k, _)| *k == key) {
            Some(&(_, at)) => at,
            None => {
                let sessions = match s.keepalive {
                    None => None,
                    Some(ka) => {
                        let at = match pinged.iter().position(|(k, _)| *k == ka) {
                            Some(at) => at,
                            None => {
                                pinged.push((ka, replay::keepalive_sessions(p, ka)?));
                                pinged.len() - 1
                            }
                        };
                        Some(pinged[at].1.as_slice())
                    }
                };
                let r = replay::record(p, sessions, strat.as_ref(), env)?;
                let at = match recordings.iter().position(|o| o.same_as(&r)) {
                    Some(at) => at,
                    None => {
                        recordings.push(r);
                        recordings.len() - 1
                    }
                };
                recorded.push((key, at));
                at
            }
        };
        let leading = placed.leading(s.ttl, i);
        let run_key = (at, s.ttl, leading, detail);
        if let Some((_, run)) = done.iter().find(|(k, _)| *k == run_key) {
            return Ok(run.clone());
        }
        let run = recordings[at].run(p, s, cache, env, leading, opts.break_threshold, detail)?;
        done.push((run_key, run.clone()));
        Ok::<_, AccountError>(run)
    };
    let harness = harness_setting(opts);
    let p = replay::prepare(&l.transcript, env, tokenizer)?;
    let own = run_one(&p, &harness, true)?;
    let others = opts
        .whatif
        .iter()
        .map(|s| {
            run_one(&p, s, false).map_err(|e| AccountError::Under {
                label: s.label(),
                source: Box::new(e),
            })
        })
        .collect::<Result<Vec<_>, AccountError>>();
    let requests = own.requests.clone();
    Ok((
        requests,
        others.map(|o| std::iter::once(own).chain(o).collect()),
    ))
}

fn harness_setting(opts: &AccountOptions) -> Setting {
    Setting {
        strategy: opts.strategy.clone(),
        ttl: None,
        keepalive: None,
    }
}

/// Reads, places and replays `sessions`. `progress` counts sessions (read, then replayed).
/// Sessions outside `opts.selection` still place the leading block on the timeline but are
/// neither replayed nor counted; requests outside its days are not added up.
pub fn run(
    sessions: &[SessionFiles],
    opts: &AccountOptions,
    env: &ReplayEnv,
    progress: &indicatif::ProgressBar,
) -> Result<Account, AccountError> {
    strategy::parse_list(&opts.strategy)?;
    for s in &opts.whatif {
        strategy::parse_list(&s.strategy)?;
    }
    progress.set_length(2 * sessions.len() as u64);
    progress.set_message("reading");
    let (loaded, times, failures) = read_all(sessions, !opts.predict, progress);
    let sel = &opts.selection;
    let chosen: Vec<bool> = loaded
        .iter()
        .zip(&times)
        .map(|(l, t)| sel.in_project(&l.files.project) && t.iter().any(|&ms| sel.in_window(ms)))
        .collect();
    let placed = if opts.predict {
        Placed::new(&loaded, &times, opts)
    } else {
        Placed { by_ttl: Vec::new() }
    };
    let ids: Vec<String> = loaded.iter().map(|l| l.files.session_id.clone()).collect();
    progress.set_message(if opts.predict {
        "replaying"
    } else {
        "adding up"
    });
    let tokenizer = Arc::new(Tokenizer::new(Encoding::O200kBase));
    let replayed: Vec<Option<Result<Replayed, AccountError>>> = loaded
        .par_iter()
        .enumerate()
        .map(|(i, l)| {
            let r = chosen[i].then(|| {
                if opts.predict {
                    replay_one(l, i, &placed, opts, env, &tokenizer)
                } else {
                    let q = billed::requests(&l.transcript, &env.prices, opts.break_threshold);
                    Ok((q, Ok(Vec::new())))
                }
            });
            progress.inc(1);
            r
        })
        .collect();
    let mut whatif: Vec<WhatIf> = std::iter::once(harness_setting(opts))
        .chain(opts.whatif.iter().cloned())
        .map(WhatIf::new)
        .collect();
    if !opts.predict {
        whatif.clear();
    }
    let mut tally = Tally {
        whatif,
        failures,
        ..Tally::default()
    };
    for (i, (l, r)) in loaded.into_iter().zip(replayed).enumerate() {
        if let Some(r) = r {
            tally.add(i, l, r, &placed, &ids, sel);
        }
    }
    let Tally {
        whatif,
        failures,
        outcomes,
        excluded,
        files,
        bytes,
    } = tally;
    progress.finish_and_clear();
    Ok(Account {
        options: opts.clone(),
        sessions: outcomes,
        failures,
        whatif,
        whatif_excluded: excluded,
        files,
        bytes,
        predicted: opts.predict,
    })
}

/// What the sessions of a run add up to, gathered session by session in input order.
#[derive(Default)]
struct Tally {
    /// The harness setting's row, then one per what-if setting.
    whatif: Vec<WhatIf>,
    /// Sessions that could not be read or replayed.
    failures: Vec<Failure>,
    /// The sessions counted.
    outcomes: Vec<SessionOutcome>,
    /// Sessions counted whose what-if replays failed (left out of the what-if rows).
    excluded: Vec<Failure>,
    /// Files and bytes of the sessions counted.
    files: usize,
    bytes: u64,
}

impl Tally {
    /// Adds session `i`'s replay (or its failure).
    fn add(
        &mut self,
        i: usize,
        l: load::LoadedSession,
        r: Result<Replayed, AccountError>,
        placed: &Placed,
        ids: &[String],
        sel: &select::Selection,
    ) {
        let (requests, runs) = match r {
            Ok(x) => x,
            Err(e) => {
                self.failures.push(Failure {
                    session: label(&l.files),
                    message: locate::locate(&l, &e.to_string()),
                });
                return;
            }
        };
        match runs {
            Ok(runs) => add_whatif(&mut self.whatif, &runs, sel),
            Err(e) => self.excluded.push(Failure {
                session: label(&l.files),
                message: locate::locate(&l, &e.to_string()),
            }),
        }
        self.files += l.files.files().len();
        self.bytes += l.bytes;
        self.outcomes.push(SessionOutcome {
            warm_from: placed.warm(None, i).map(|w| ids[w].clone()),
            kept_warm: placed.kept(None, i),
            skipped_records: l.transcript.skipped.len(),
            requests: requests
                .into_iter()
                .filter(|q| sel.in_window(q.sent_at_ms))
                .collect(),
            files: l.files,
            bytes: l.bytes,
        });
    }
}

/// Adds one session's runs to the what-if rows (requests within the selection's days; a
/// session's pings count whole).
fn add_whatif(whatif: &mut [WhatIf], runs: &[replay::SessionRun], sel: &select::Selection) {
    for (w, run) in whatif.iter_mut().zip(runs) {
        for q in run.requests.iter().filter(|q| sel.in_window(q.sent_at_ms)) {
            w.predicted.add(&q.predicted);
            w.output_usd += q.output_usd;
            w.breaks += usize::from(q.predicted_break);
        }
        w.pings += run.pings;
        w.ping_cost.add(&run.ping_cost);
        w.ping_output_usd += run.ping_output_usd;
    }
}
