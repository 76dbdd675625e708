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
pub mod chart;
pub mod figures;
pub mod load;
pub mod replay;
pub mod report;
pub mod synthetic;
pub mod timeline;
pub mod whatif;

use std::collections::BTreeSet;
use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::ReplayEnv;
use crate::import::discover::{SessionFiles, TranscriptKind};
use crate::import::scenario::model_family;
use crate::prompt::{Encoding, Tokenizer, Ttl};
use crate::strategy;

pub use figures::{Counters, RequestFigures};
pub use replay::{Keepalive, Setting};
pub use whatif::WhatIf;

/// How sessions share the account's leading block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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
    pub sharing: Sharing,
    /// The what-if settings (the harness's own setting is always replayed first).
    pub whatif: Vec<Setting>,
    /// A break reads less than this share of the previous prompt (as in `validate`).
    pub break_threshold: f64,
}

impl Default for AccountOptions {
    fn default() -> Self {
        AccountOptions {
            cache: crate::cache::DEFAULT_CACHE.into(),
            strategy: "permission-mode".into(),
            sharing: Sharing::Timeline,
            whatif: Vec::new(),
            break_threshold: 0.5,
        }
    }
}

/// One session of the account under the harness's own setting.
#[derive(Debug, Clone)]
pub struct SessionOutcome {
    pub files: SessionFiles,
    pub bytes: u64,
    /// The session whose request left the leading block alive at this one's start.
    pub warm_from: Option<String>,
    /// The account's requests kept the leading block alive for the whole session.
    pub kept_warm: bool,
    pub requests: Vec<RequestFigures>,
    /// Transcript records the importer could not interpret.
    pub skipped_records: usize,
}

/// A session that could not be read or replayed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub session: String,
    pub message: String,
}

/// The whole account.
#[derive(Debug, Clone)]
pub struct Account {
    pub options: AccountOptions,
    /// In order of their first request.
    pub sessions: Vec<SessionOutcome>,
    pub failures: Vec<Failure>,
    /// The harness's setting first, then every what-if setting, over the sessions all of them
    /// replayed.
    pub whatif: Vec<WhatIf>,
    /// Sessions left out of the what-if because some setting could not replay them.
    pub whatif_excluded: Vec<Failure>,
    pub files: usize,
    pub bytes: u64,
}

fn label(f: &SessionFiles) -> String {
    f.main
        .as_ref()
        .or(f.subagents.first())
        .map_or_else(|| f.session_id.clone(), |p| p.display().to_string())
}

/// Reads, places and replays `sessions`. `progress` counts sessions (read, then replayed).
pub fn run(
    sessions: &[SessionFiles],
    opts: &AccountOptions,
    env: &ReplayEnv,
    progress: &indicatif::ProgressBar,
) -> Result<Account, String> {
    strategy::parse_list(&opts.strategy)?;
    for s in &opts.whatif {
        strategy::parse_list(&s.strategy)?;
    }
    progress.set_length(2 * sessions.len() as u64);
    progress.set_message("reading");
    let read: Vec<Result<load::LoadedSession, Failure>> = sessions
        .par_iter()
        .map(|f| {
            let r = load::load(f).map_err(|message| Failure {
                session: label(f),
                message,
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
                message: "no API request with usage in the transcript".into(),
            }),
            Err(e) => failures.push(e),
        }
    }
    let files: usize = sessions
        .iter()
        .map(|s| usize::from(s.main.is_some()) + s.subagents.len())
        .sum();
    let bytes = loaded.iter().map(|l| l.bytes).sum();
    let times: Vec<Vec<u64>> = loaded.iter().map(|l| l.request_times()).collect();
    let mut order: Vec<usize> = (0..loaded.len()).collect();
    order.sort_by_key(|&i| (times[i][0], label(&loaded[i].files)));
    let loaded: Vec<load::LoadedSession> = {
        let mut slots: Vec<Option<load::LoadedSession>> = loaded.into_iter().map(Some).collect();
        order.iter().map(|&i| slots[i].take().unwrap()).collect()
    };
    let times: Vec<Vec<u64>> = order.iter().map(|&i| times[i].clone()).collect();

    // Phase 2: the timeline, once per TTL in use (`None`: each session's own).
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
    // The TTL the harness asked for, from what the transcript says of the harness (its version),
    // never from the billed write classes: those are the answer the replay is scored on.
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
    type Placed = (Option<Ttl>, Vec<Option<usize>>, Vec<bool>);
    let warm: Vec<Placed> = ttls
        .into_iter()
        .map(|ttl| {
            let (w, k) = match opts.sharing {
                Sharing::None => (vec![None; loaded.len()], vec![false; loaded.len()]),
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
                    (w, k)
                }
            };
            (ttl, w, k)
        })
        .collect();
    let warm_for = |ttl: Option<Ttl>, i: usize| -> Option<usize> {
        warm.iter()
            .find(|(t, _, _)| *t == ttl)
            .and_then(|(_, w, _)| w[i])
    };
    let kept_for = |ttl: Option<Ttl>, i: usize| -> bool {
        warm.iter()
            .find(|(t, _, _)| *t == ttl)
            .is_some_and(|(_, _, k)| k[i])
    };
    let ids: Vec<String> = loaded.iter().map(|l| l.files.session_id.clone()).collect();

    // Phase 3: replay every session under every setting, in parallel over sessions.
    progress.set_message("replaying");
    let tokenizer = Arc::new(Tokenizer::new(Encoding::O200kBase));
    let harness_setting = Setting {
        strategy: opts.strategy.clone(),
        ttl: None,
        keepalive: None,
    };
    type Replayed = Result<(SessionOutcome, Result<Vec<replay::SessionRun>, String>), Failure>;
    let replayed: Vec<Replayed> = loaded
        .into_par_iter()
        .enumerate()
        .map(|(i, l)| {
            let fail = |message: String| Failure {
                session: label(&l.files),
                message,
            };
            let cache = match l.files.kind {
                TranscriptKind::ClaudeCode => opts.cache.as_str(),
                TranscriptKind::Codex => "openai",
            };
            let run_one = |p: &replay::Prepared, s: &Setting| {
                let strat = strategy::parse_list(&s.strategy)?
                    .into_iter()
                    .next()
                    .ok_or("no strategy given")?;
                replay::replay(
                    p,
                    s,
                    strat.as_ref(),
                    cache,
                    env,
                    match (warm_for(s.ttl, i), kept_for(s.ttl, i)) {
                        (None, _) => replay::LeadingBlock::Cold,
                        (Some(_), false) => replay::LeadingBlock::Warm,
                        (Some(_), true) => replay::LeadingBlock::KeptWarm,
                    },
                    opts.break_threshold,
                )
            };
            let result = replay::prepare(&l.transcript, env, &tokenizer).and_then(|p| {
                let own = run_one(&p, &harness_setting)?;
                let others = opts
                    .whatif
                    .iter()
                    .map(|s| run_one(&p, s).map_err(|e| format!("under {}: {e}", s.label())))
                    .collect::<Result<Vec<_>, String>>();
                Ok((own, others))
            });
            progress.inc(1);
            let (own, others) = result.map_err(fail)?;
            let outcome = SessionOutcome {
                warm_from: warm_for(None, i).map(|w| ids[w].clone()),
                kept_warm: kept_for(None, i),
                files: l.files,
                bytes: l.bytes,
                skipped_records: l.transcript.skipped.len(),
                requests: own.requests.clone(),
            };
            Ok((
                outcome,
                others.map(|o| std::iter::once(own).chain(o).collect()),
            ))
        })
        .collect();

    let mut outcomes = Vec::new();
    let mut whatif: Vec<WhatIf> = std::iter::once(harness_setting)
        .chain(opts.whatif.iter().cloned())
        .map(WhatIf::new)
        .collect();
    let mut excluded = Vec::new();
    for r in replayed {
        match r {
            Err(f) => failures.push(f),
            Ok((outcome, runs)) => {
                match runs {
                    Ok(runs) => {
                        for (w, run) in whatif.iter_mut().zip(&runs) {
                            for q in &run.requests {
                                w.predicted.add(&q.predicted);
                                w.output_usd += q.output_usd;
                                w.breaks += usize::from(q.predicted_break);
                            }
                            w.pings += run.pings;
                            w.ping_cost.add(&run.ping_cost);
                            w.ping_output_usd += run.ping_output_usd;
                        }
                    }
                    Err(message) => excluded.push(Failure {
                        session: label(&outcome.files),
                        message,
                    }),
                }
                outcomes.push(outcome);
            }
        }
    }
    progress.finish_and_clear();
    Ok(Account {
        options: opts.clone(),
        sessions: outcomes,
        failures,
        whatif,
        whatif_excluded: excluded,
        files,
        bytes,
    })
}
