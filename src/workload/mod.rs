//! Many sessions on one cache: block-hash traces replayed as one arrival stream.
//!
//! Each trace is a session of streams (main and subagents). Its requests become
//! [`Request`]s whose tokens are its hash blocks: one synthetic 64-token run per distinct
//! (trace, hash id), so equal hashes are equal prefixes (ids are local to a trace, so sessions
//! share no content); `segments` says how a prompt is cut into segments and what its tail (the
//! tokens past its last full block) holds. Blocks inside the header's `tool_tokens` are at the
//! tools level, then `system_tokens` at the system level, the rest are messages.
//!
//! Sessions start at their recorded time (kv-cache-tester traces all start at 0), on a seeded
//! Poisson schedule, or back to back in N concurrency slots ([`Arrivals`]). Every request is
//! then placed on one clock (`crate::engine::schedule`) and replayed against one cache ([`replay`]).

pub mod curve;
pub mod kv;
pub mod replay;
mod segments;

pub use replay::WorkloadError;

use crate::engine::schedule::Timed;
use crate::prompt::Request;
use crate::trace::Trace;

/// When each session starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// At its recorded time (every kv-cache-tester trace at 0; Mooncake at its timestamps).
    Recorded,
    /// Seeded exponential gaps: on average `rate` sessions per second.
    Poisson(f64),
    /// At most this many sessions at once: each starts when a slot frees (lowest slot first).
    Concurrency(usize),
}

impl Arrivals {
    /// Parses `recorded`, `poisson:RATE` (sessions per second) or `concurrency:N`.
    pub fn parse(s: &str) -> Result<Arrivals, WorkloadError> {
        let bad = || WorkloadError::Arrivals {
            spec: s.to_string(),
        };
        match s.split_once(':') {
            None if s == "recorded" => Ok(Arrivals::Recorded),
            Some(("poisson", r)) => match r.parse::<f64>() {
                Ok(r) if r.is_finite() && r > 0.0 => Ok(Arrivals::Poisson(r)),
                _ => Err(bad()),
            },
            Some(("concurrency", n)) => match n.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Arrivals::Concurrency(n)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

/// How long a session runs on its own clock: its last response's end.
pub fn duration_ms(t: &Trace) -> u64 {
    t.streams
        .iter()
        .flat_map(|s| &s.requests)
        .map(|r| r.finished_at_ms())
        .max()
        .unwrap_or(0)
}

/// The start of each session (ms on the workload clock), in input order.
pub fn starts(traces: &[Trace], arrivals: Arrivals, seed: u64) -> Vec<u64> {
    match arrivals {
        Arrivals::Recorded => vec![0; traces.len()],
        Arrivals::Poisson(rate) => {
            let mut rng = crate::scenario::Rng(seed);
            let mut at = 0.0f64;
            traces
                .iter()
                .map(|_| {
                    at += -rng.unit().ln() / rate * 1000.0;
                    at.round() as u64
                })
                .collect()
        }
        Arrivals::Concurrency(n) => {
            let mut free = vec![0u64; n];
            traces
                .iter()
                .map(|t| {
                    let (slot, &start) = free
                        .iter()
                        .enumerate()
                        .min_by_key(|(i, &f)| (f, *i))
                        .unwrap_or((0, &0));
                    free[slot] = start + duration_ms(t);
                    start
                })
                .collect()
        }
    }
}

/// One request of the workload, as the report refers to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestRef {
    /// Index of the session (trace) in the input order.
    pub session: usize,
    /// Index of the stream within its session.
    pub stream: usize,
    /// Index of the request within its stream.
    pub request: usize,
    /// A keep-alive ping (priced, but not a request of the trace).
    pub ping: bool,
}

/// How requests are built from a trace.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Serve every request on this model instead of the recorded one.
    pub model: Option<String>,
    /// Interval of keep-alive pings during idle gaps longer than it (each re-sends the stream's
    /// last request with one output token); `None`: no pings.
    pub keepalive_ms: Option<u64>,
    /// Every session shares the cache: stream names carry the trace id (`trace_0001/main`) so
    /// they stay distinct; otherwise a stream keeps its own name (`main`, which Anthropic-style
    /// caches treat as the main thread).
    pub shared_pool: bool,
}

/// Every request of session `si` (starting at `start`), as timed requests with their
/// references, stream by stream. Stream indices are made unique over the workload by `stream0`.
pub fn session_requests(
    trace: &Trace,
    si: usize,
    start: u64,
    stream0: usize,
    opts: &BuildOptions,
) -> Vec<(RequestRef, Timed)> {
    let blocks = segments::Blocks::new(trace);
    let mut out = Vec::new();
    for (ti, s) in trace.streams.iter().enumerate() {
        let name = if opts.shared_pool {
            format!("{}/{}", trace.id, s.name)
        } else {
            s.name.clone()
        };
        let mut prev = segments::Stream::default();
        let levels = segments::Levels {
            tools: s.tool_tokens,
            system: s.system_tokens,
        };
        for (ri, r) in s.requests.iter().enumerate() {
            let next = s.requests.get(ri + 1).map(|n| n.hash_ids.as_slice());
            let key = format!("{}/{}/{ri}", trace.id, s.name);
            let segments = prev.prompt(&blocks, &r.hash_ids, r.input_tokens, next, levels, &key);
            let sent = start + r.sent_at_ms;
            let request = Request {
                index: out.len(),
                stream: name.clone(),
                step: ri,
                model: opts.model.clone().unwrap_or_else(|| model_of(&r.model)),
                sent_at_ms: sent,
                segments,
                settings: Default::default(),
                reply: Vec::new(),
                output_tokens: r.output_tokens,
            };
            let finished = start + r.finished_at_ms();
            let visible = r.ttft_ms.map_or(finished, |t| (sent + t).min(finished));
            let at = RequestRef {
                session: si,
                stream: ti,
                request: ri,
                ping: false,
            };
            let next = s.requests.get(ri + 1).map(|n| start + n.sent_at_ms);
            let pings = pings(&request, finished, next, opts.keepalive_ms, at);
            out.push((
                at,
                Timed {
                    stream: stream0 + ti,
                    request,
                    sent_ms: sent,
                    visible_ms: visible,
                    finished_ms: finished,
                },
            ));
            out.extend(pings.into_iter().map(|(a, mut t)| {
                t.stream = stream0 + ti;
                (a, t)
            }));
        }
    }
    out
}

/// Keep-alive pings after a response finished at `finished` until the stream's next request.
fn pings(
    req: &Request,
    finished: u64,
    next: Option<u64>,
    every: Option<u64>,
    at: RequestRef,
) -> Vec<(RequestRef, Timed)> {
    let (Some(next), Some(every)) = (next, every.filter(|&e| e > 0)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut t = finished + every;
    while t < next {
        let mut r = req.clone();
        r.sent_at_ms = t;
        r.output_tokens = 1;
        out.push((
            RequestRef { ping: true, ..at },
            Timed {
                stream: 0,
                request: r,
                sent_ms: t,
                visible_ms: t,
                finished_ms: t,
            },
        ));
        t += every;
    }
    out
}

/// The recorded model, or the bundled default when the trace names none.
fn model_of(recorded: &str) -> String {
    if recorded.is_empty() {
        crate::trace::scenario::DEFAULT_MODEL.to_string()
    } else {
        recorded.to_string()
    }
}
