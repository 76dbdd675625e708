//! How one account's cache sees a validation run: every stream of every transcript on one clock
//! (the transcripts' own timestamps), against one cache model instance.
//!
//! One transcript keeps its stream names and the cache parameters its harness ran with. Several
//! transcripts (one user's sessions) are placed by their first records' times; their streams are
//! named `N:stream` so that no two sessions share a stream's state, and each stream keeps the
//! TTL class its own harness asked for.

use std::sync::Arc;

use super::{fork, Events, Run, SharedPrefix, ValidateOptions};
use crate::cache::{self, CacheConfig, CacheOutcome};
use crate::engine::schedule::{leading_block, Schedule, Timed};
use crate::import::{is_fork, StreamKind};
use crate::prompt::{Tokenizer, Ttl};
use crate::strategy::Strategy;

/// Outcomes per transcript, per stream, per request.
pub(super) type Outcomes = Vec<Vec<Vec<CacheOutcome>>>;

/// Replays every request of `runs` against one cache; outcomes in the runs' own order.
pub(super) fn replay(
    runs: &[Run],
    opts: &ValidateOptions,
    strategy: &dyn Strategy,
    tokenizer: &Arc<Tokenizer>,
    prices: &cache::PriceTable,
) -> Result<Outcomes, super::ValidateError> {
    let several = runs.len() > 1;
    let mut config = if several {
        account_config(runs)
    } else {
        runs[0].prepared.config.clone()
    };
    if opts.shared_prefix == SharedPrefix::KeptWarm {
        config.anthropic.prefix_kept_warm = true;
    }
    let mut cache = cache::build_with(&opts.cache, prices, &config)?;
    let start = runs.iter().map(|r| r.prepared.origin_ms).min().unwrap_or(0);
    let mut schedule = Schedule::new();
    let (streams, index) = schedule_runs(&mut schedule, runs, opts, strategy, start);
    let outcomes = schedule.run_with(cache.as_mut(), |t, req, sent| {
        let s = &streams[t.stream];
        // A fork starts from the main thread's latest prompt (see [`fork`]).
        let k = sent.count(t.stream);
        let base = match (s.fork, k) {
            (true, 0) => s.main.map(|m| (m, sent.last(m))),
            (true, _) => Some((t.stream, sent.last(t.stream))),
            _ => None,
        };
        match base {
            Some((b, Some(base))) => {
                let with_reply = sent.finished_by(b, t.sent_ms);
                fork::fork_request(&req, base, with_reply, req.prompt_tokens(), k, tokenizer)
            }
            _ => req,
        }
    });
    Ok(index
        .into_iter()
        .map(|run| {
            run.into_iter()
                .map(|ids| ids.into_iter().map(|i| outcomes[i].clone()).collect())
                .collect()
        })
        .collect())
}

/// Pushes every request of `runs` onto `schedule` (and the prewarmed leading block where the
/// mode allows one); returns what the replay needs of each stream and the schedule ids of each
/// run's streams' requests.
fn schedule_runs(
    schedule: &mut Schedule,
    runs: &[Run],
    opts: &ValidateOptions,
    strategy: &dyn Strategy,
    start: u64,
) -> (Vec<StreamRef>, Vec<Vec<Vec<usize>>>) {
    let several = runs.len() > 1;
    // Global stream index of each (run, stream), whether it is a fork, and its run's main stream.
    let mut streams: Vec<StreamRef> = Vec::new();
    let mut index: Vec<Vec<Vec<usize>>> = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        let offset = if several {
            run.prepared.origin_ms - start
        } else {
            0
        };
        if let Some((imp, session)) = run
            .prepared
            .imported
            .first()
            .zip(run.prepared.sessions.first())
        {
            // The prewarmed block is sized by the first request's billed read: `billed` only.
            if opts.events == Events::Billed
                && opts.shared_prefix != SharedPrefix::None
                && imp.shared_prefix > 0
            {
                schedule.prewarm(offset, leading_block(session, strategy));
            }
        }
        let base = streams.len();
        let main = run
            .prepared
            .imported
            .iter()
            .position(|i| i.kind == StreamKind::Main)
            .map(|m| base + m);
        let mut per_stream = Vec::new();
        for (s, (imp, reqs)) in run.prepared.imported.iter().zip(&run.requests).enumerate() {
            streams.push(StreamRef {
                fork: imp.kind == StreamKind::Agent && is_fork(&imp.stream),
                main,
            });
            let ids = reqs
                .iter()
                .map(|(req, at)| {
                    let mut request = req.clone();
                    if several {
                        request.stream = format!("{r}:{}", request.stream);
                        request.sent_at_ms += offset;
                    }
                    schedule.push(Timed {
                        stream: base + s,
                        request,
                        sent_ms: at.sent_ms + offset,
                        visible_ms: at.visible_ms + offset,
                        finished_ms: at.finished_ms + offset,
                    })
                })
                .collect();
            per_stream.push(ids);
        }
        index.push(per_stream);
    }
    (streams, index)
}

/// What the shared replay needs to know of a stream.
struct StreamRef {
    /// A fork of its session's main thread (it re-sends the main prompt).
    fork: bool,
    /// The global index of its session's main stream.
    main: Option<usize>,
}

/// The cache parameters of several sessions on one cache: the first session's, with every
/// stream of every session listed under its `N:stream` name with the class its harness asked for.
fn account_config(runs: &[Run]) -> CacheConfig {
    let mut config = runs[0].prepared.config.clone();
    config.anthropic.stream_ttls.clear();
    for (r, run) in runs.iter().enumerate() {
        let c = &run.prepared.config.anthropic;
        for imp in &run.prepared.imported {
            let name = super::stream_name(imp);
            let ttl: Ttl = c.stream_ttls.get(&name).copied().unwrap_or(match imp.kind {
                StreamKind::Agent => c.subagent_message_ttl.unwrap_or(c.message_ttl),
                StreamKind::Main => c.message_ttl,
            });
            config
                .anthropic
                .stream_ttls
                .insert(format!("{r}:{name}"), ttl);
        }
    }
    config
}
