//! The exact requests of a log: every piece of every body a segment with its real content, its
//! real `cache_control` mark and a token length that makes the request add up to its bill.
//!
//! **Token lengths.** Each piece is tokenized with the bundled tokenizer (o200k; the provider's
//! own tokenizer is not public), then lengths are fitted to the billed usage. A piece keeps the
//! length it got when it first appeared in its stream, so equal content stays equal tokens from
//! request to request. The pieces new in a request share what the bill leaves, in proportion
//! to their tokenized sizes, in two groups: those up to and including the last marked block
//! make up `cache_read + cache_creation` (Anthropic: everything before the last breakpoint is
//! read or written), those after it make up `input_tokens`; what is left after the last block
//! (the API's few tokens of turn framing) becomes a trailer segment of its own. A request without
//! usage keeps the tokenized sizes. Each request says which it got ([`Fit`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::body::{normalize_model, Body};
use super::{Exchange, LogError, Usage};
use crate::prompt::{
    ContentId, Encoding, Level, Request, RequestSettings, Role, Segment, SegmentKind, TokenSource,
    Tokenizer,
};

/// Label of the segment after a request's last block: the API's few tokens of turn framing.
pub const TRAILER: &str = "(after the last block)";

/// How a request's token lengths relate to its bill.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fit {
    /// The pieces add up to the billed prompt, and the marked part to read + creation.
    Exact,
    /// Scaled, but the known pieces already differ from the bill by this many tokens
    /// (positive: the bill is larger).
    Off(i64),
    /// No usage in the response: tokenized sizes as they are.
    Tokenized,
}

/// One request of the log, rebuilt.
#[derive(Debug, Clone)]
pub struct BuiltRequest {
    /// Where it sits in the log (`interaction 2`, `line 7`; `+ server pass 2` for a pass the
    /// server ran after its own compaction).
    pub place: String,
    /// The parsed body; `None` for a server-side pass or a usage-only record.
    pub body: Option<Body>,
    /// Billed usage of this request (or of this server pass).
    pub usage: Option<Usage>,
    /// The provider's own verdict on a miss, when the response has one.
    pub verdict: Option<String>,
    /// The request as the cache models see it (segments, model, stream, send time).
    pub request: Request,
    /// How the lengths were fitted to the bill.
    pub fit: Fit,
    /// The stream's first request read from the cache: the cache was warm before the log began.
    pub warm_start: bool,
    /// A pass the server ran on its own compacted context (`usage.iterations[]` after a
    /// `compaction` pass): the sent prefix is not what it read.
    pub server_compaction: bool,
    /// Milliseconds from sending to the first response byte, when the log has both times.
    pub ttfb_ms: Option<u64>,
}

/// A log's requests in send order, grouped into streams.
#[derive(Debug, Clone)]
pub struct BuiltLog {
    /// The log file.
    pub file: PathBuf,
    /// The rebuilt requests, in send order.
    pub requests: Vec<BuiltRequest>,
    /// Stream names in order of first appearance.
    pub streams: Vec<String>,
    /// Whether the log carried timestamps (otherwise requests are placed 1 s apart).
    pub timed: bool,
}

/// What a stream remembers: the identity of its conversation and the lengths given so far.
struct StreamState {
    name: String,
    /// The first message block's content hash: one conversation, whatever the model.
    first_message: Option<ContentId>,
    /// Tools-and-system hash, for streams without messages in common.
    head: ContentId,
    lengths: HashMap<ContentId, u32>,
}

fn piece_id(level: Level, value: &serde_json::Value) -> ContentId {
    let text = serde_json::to_string(value).unwrap_or_default();
    xxh3_64_with_seed(text.as_bytes(), level as u64 + 0x5151)
}

fn head_id(body: &Body) -> ContentId {
    let mut h = 0u64;
    for p in body.pieces.iter().filter(|p| p.level != Level::Messages) {
        h = xxh3_64_with_seed(&piece_id(p.level, &p.value).to_le_bytes(), h);
    }
    h
}

/// Splits `avail` over `counts` in proportion (largest remainder), each at least 1 when there
/// is enough to go round.
fn share(avail: u64, counts: &[u64]) -> Vec<u32> {
    let total: u64 = counts.iter().sum::<u64>().max(1);
    let floor_one = avail >= counts.len() as u64;
    let base = if floor_one { counts.len() as u64 } else { 0 };
    let spread = avail - base;
    let mut out: Vec<u64> = counts
        .iter()
        .map(|&c| (spread as u128 * c as u128 / total as u128) as u64)
        .collect();
    let mut left = spread - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| {
        std::cmp::Reverse((
            spread as u128 * counts[i] as u128 % total as u128,
            usize::MAX - i,
        ))
    });
    for &i in order.iter().cycle().take(counts.len() * 2) {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out.iter()
        .map(|&n| (n + u64::from(floor_one)).min(u64::from(u32::MAX)) as u32)
        .collect()
}

/// Gives every piece of the group `idx` a length; returns the residual (bill minus lengths).
fn fit_group(
    idx: &[usize],
    target: Option<u64>,
    ids: &[ContentId],
    counts: &[u64],
    lengths: &mut HashMap<ContentId, u32>,
) -> i64 {
    let new: Vec<usize> = idx
        .iter()
        .copied()
        .filter(|&i| !lengths.contains_key(&ids[i]))
        .collect();
    let known: u64 = idx
        .iter()
        .filter(|&&i| !new.contains(&i))
        .map(|&i| u64::from(lengths[&ids[i]]))
        .sum();
    let Some(target) = target else {
        for &i in &new {
            lengths.insert(ids[i], counts[i].max(1) as u32);
        }
        return 0;
    };
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<usize> = new
        .iter()
        .copied()
        .filter(|&i| seen.insert(ids[i]))
        .collect();
    // A piece that repeats within the group counts once per occurrence.
    let reps: Vec<u64> = distinct
        .iter()
        .map(|&d| new.iter().filter(|&&i| ids[i] == ids[d]).count() as u64)
        .collect();
    if distinct.is_empty() || target <= known {
        for &d in &distinct {
            lengths.insert(ids[d], counts[d].max(1) as u32);
        }
        let now: u64 = idx.iter().map(|&i| u64::from(lengths[&ids[i]])).sum();
        return target as i64 - now as i64;
    }
    let weights: Vec<u64> = distinct
        .iter()
        .zip(&reps)
        .map(|(&d, r)| counts[d].max(1) * r)
        .collect();
    let shares = share(target - known, &weights);
    for ((&d, r), s) in distinct.iter().zip(&reps).zip(shares) {
        lengths.insert(ids[d], (u64::from(s) / r).max(1) as u32);
    }
    let now: u64 = idx.iter().map(|&i| u64::from(lengths[&ids[i]])).sum();
    target as i64 - now as i64
}

fn segment(
    tok: &Tokenizer,
    id: ContentId,
    level: Level,
    role: Option<Role>,
    label: &str,
    len: u32,
    mark: Option<crate::prompt::Ttl>,
) -> Arc<Segment> {
    let kind = match level {
        Level::Tools => SegmentKind::Tool,
        Level::System => SegmentKind::System,
        Level::Messages => SegmentKind::Message(role.unwrap_or(Role::User)),
    };
    Arc::new(Segment {
        id,
        level,
        kind,
        label: label.to_string(),
        tokens: tok.tokens(id, &TokenSource::Count(len)),
        breakpoint: mark,
    })
}

/// The billed pass that the sent body itself stands for: the first iteration when the server
/// compacted (it ran over the body as sent), else the whole usage.
fn body_pass(u: &Usage) -> (u64, u64) {
    match u.iterations.first() {
        Some(it) if u.iterations.len() > 1 => (it.read + it.creation, it.input),
        _ => (u.read + u.creation, u.input),
    }
}

/// Segments of one body with lengths fitted to its bill.
fn fit_body(
    tok: &Tokenizer,
    body: &Body,
    usage: Option<&Usage>,
    st: &mut StreamState,
    uniq: u64,
    given: Option<&[u32]>,
) -> (Vec<Arc<Segment>>, Fit) {
    let ids: Vec<ContentId> = body
        .pieces
        .iter()
        .map(|p| piece_id(p.level, &p.value))
        .collect();
    if let Some(given) = given.filter(|g| g.len() == body.pieces.len()) {
        // Exported by plancache: the exact lengths travel with the log.
        let segs: Vec<Arc<Segment>> = body
            .pieces
            .iter()
            .zip(&ids)
            .zip(given)
            .map(|((p, &id), &n)| segment(tok, id, p.level, p.role, &p.path, n, p.mark))
            .collect();
        let total: u64 = given.iter().map(|&n| u64::from(n)).sum();
        let fit = match usage {
            None => Fit::Tokenized,
            Some(u) if u.prompt() == total => Fit::Exact,
            Some(u) => Fit::Off(u.prompt() as i64 - total as i64),
        };
        return (segs, fit);
    }
    let counts: Vec<u64> = body
        .pieces
        .iter()
        .map(|p| tok.count(&TokenSource::Text(p.text.clone())) as u64)
        .collect();
    let n = body.pieces.len();
    let split = body.last_mark().map_or(0, |i| i + 1);
    // Nothing read or written (a prefix below the minimum): the marks place no boundary.
    let split = match usage {
        Some(u) if body_pass(u).0 == 0 => 0,
        _ => split,
    };
    let (a_idx, b_idx): (Vec<usize>, Vec<usize>) = ((0..split).collect(), (split..n).collect());
    let (target_a, target_b) = match usage {
        Some(u) if split > 0 => {
            let (a, b) = body_pass(u);
            (Some(a), Some(b))
        }
        Some(u) => {
            let (a, b) = body_pass(u);
            (Some(0), Some(a + b))
        }
        None => (None, None),
    };
    let off_a = fit_group(&a_idx, target_a, &ids, &counts, &mut st.lengths);
    let off_b = fit_group(&b_idx, target_b, &ids, &counts, &mut st.lengths);
    let mut segs: Vec<Arc<Segment>> = body
        .pieces
        .iter()
        .zip(&ids)
        .map(|(p, &id)| segment(tok, id, p.level, p.role, &p.path, st.lengths[&id], p.mark))
        .collect();
    if off_b > 0 {
        let id = xxh3_64_with_seed(st.name.as_bytes(), uniq);
        segs.push(segment(
            tok,
            id,
            Level::Messages,
            Some(Role::User),
            TRAILER,
            off_b as u32,
            None,
        ));
    }
    let fit = match (usage, off_a, off_b.min(0)) {
        (None, _, _) => Fit::Tokenized,
        (Some(_), 0, 0) => Fit::Exact,
        (Some(_), a, b) => Fit::Off(a + b),
    };
    (segs, fit)
}

/// The stream a body belongs to: the one whose conversation starts with the same message block
/// (whatever the model, so a model switch stays in its stream), else the one with the same tools
/// and system and no messages in common, else a new stream.
fn stream_for(streams: &mut Vec<StreamState>, body: &Body) -> usize {
    let first = body
        .pieces
        .iter()
        .find(|p| p.level == Level::Messages)
        .map(|p| piece_id(p.level, &p.value));
    let head = head_id(body);
    if let Some(i) = streams
        .iter()
        .position(|s| first.is_some() && s.first_message == first)
    {
        return i;
    }
    if let Some(i) = streams
        .iter()
        .position(|s| s.head == head && first.is_none())
    {
        return i;
    }
    let name = if streams.is_empty() {
        "main".to_string()
    } else {
        format!("stream-{}", streams.len() + 1)
    };
    streams.push(StreamState {
        name,
        first_message: first,
        head,
        lengths: HashMap::new(),
    });
    streams.len() - 1
}

/// The stream of the given name, created on first use.
fn named_stream(streams: &mut Vec<StreamState>, name: &str) -> usize {
    if let Some(i) = streams.iter().position(|s| s.name == name) {
        return i;
    }
    streams.push(StreamState {
        name: name.to_string(),
        first_message: None,
        head: 0,
        lengths: HashMap::new(),
    });
    streams.len() - 1
}

/// Send times relative to the first request; 1 s apart where the log has none.
fn clock(exchanges: &[Exchange]) -> (Vec<u64>, bool) {
    let t0 = exchanges.iter().filter_map(|e| e.sent_at_ms).min();
    let mut out = Vec::with_capacity(exchanges.len());
    let mut last = 0u64;
    for (i, e) in exchanges.iter().enumerate() {
        let t = match (e.sent_at_ms, t0) {
            (Some(t), Some(t0)) => t - t0,
            _ if i == 0 => 0,
            _ => last + 1000,
        };
        out.push(t);
        last = t;
    }
    (out, t0.is_some())
}

/// The segments of one exchange, its fit, its stream and whether it starts warm.
fn segments_of(
    tok: &Tokenizer,
    ex: &Exchange,
    body: Option<&Body>,
    streams: &mut Vec<StreamState>,
    out: &[BuiltRequest],
) -> (Vec<Arc<Segment>>, Fit, String, bool) {
    match body {
        Some(b) => {
            let si = match &ex.stream_hint {
                Some(name) => named_stream(streams, name),
                None => stream_for(streams, b),
            };
            let first_of_stream = !out.iter().any(|r| r.request.stream == streams[si].name);
            let (segs, fit) = fit_body(
                tok,
                b,
                ex.usage.as_ref(),
                &mut streams[si],
                out.len() as u64,
                ex.segment_tokens.as_deref(),
            );
            let warm = first_of_stream
                && ex.usage.as_ref().is_some_and(|u| {
                    body_pass(u).0 > 0 && u.iterations.first().map_or(u.read, |i| i.read) > 0
                });
            (segs, fit, streams[si].name.clone(), warm)
        }
        None => {
            let u = ex.usage.clone().unwrap_or_default();
            let id = xxh3_64_with_seed(ex.place.as_bytes(), 0x07e1);
            let seg = segment(
                tok,
                id,
                Level::Messages,
                None,
                "(no body logged)",
                u.prompt().min(u64::from(u32::MAX)) as u32,
                None,
            );
            (vec![seg], Fit::Exact, "main".to_string(), false)
        }
    }
}

/// The distinct content a log's requests lay out (each segment once, however many requests
/// repeat it), held to the session token budget (`--max-session-tokens`) as a scenario's is: a
/// request's content is laid out as token ids, so a billed figure from the log must be checked
/// before it becomes an allocation.
#[derive(Default)]
struct Content {
    /// Segments laid out so far (id and length).
    seen: std::collections::HashSet<(ContentId, usize)>,
    /// Their tokens.
    tokens: u64,
}

impl Content {
    fn limit() -> u64 {
        crate::budget::Budget::current().max_session_tokens
    }

    fn over(path: &Path, ex: &Exchange, what: String) -> LogError {
        LogError::new(
            path,
            &ex.place,
            format!("{what}, above the session limit of {}", Content::limit()),
            format!("raise {} if the log is right", crate::budget::TOKENS_FLAG),
        )
    }

    /// Before laying out a request: what its bill (or its exported segment lengths) says it
    /// sent bounds the tokens laid out for it.
    fn check_bill(&self, path: &Path, ex: &Exchange) -> Result<(), LogError> {
        let sum3 = |a: u64, b: u64, c: u64| a.saturating_add(b).saturating_add(c);
        let billed = ex.usage.as_ref().map_or(0, |u| {
            u.iterations
                .iter()
                .map(|i| sum3(i.input, i.creation, i.read))
                .fold(sum3(u.input, u.creation, u.read), u64::max)
        });
        let given: u64 = ex
            .segment_tokens
            .iter()
            .flatten()
            .map(|&n| u64::from(n))
            .sum();
        match billed.max(given) {
            n if n > Content::limit() => Err(Content::over(
                path,
                ex,
                format!("the request's prompt is {n} tokens"),
            )),
            _ => Ok(()),
        }
    }

    /// After laying out a request: adds its new segments.
    fn add(&mut self, path: &Path, ex: &Exchange, segs: &[Arc<Segment>]) -> Result<(), LogError> {
        for s in segs {
            if self.seen.insert((s.id, s.len())) {
                self.tokens = self.tokens.saturating_add(s.len() as u64);
            }
        }
        if self.tokens > Content::limit() {
            return Err(Content::over(
                path,
                ex,
                format!(
                    "the log's distinct content reaches {} tokens here",
                    self.tokens
                ),
            ));
        }
        Ok(())
    }
}

/// Rebuilds every request of a log.
pub fn build_log(path: &Path, exchanges: &[Exchange]) -> Result<BuiltLog, LogError> {
    let tok = Tokenizer::new(Encoding::O200kBase);
    let mut content = Content::default();
    let (times, timed) = clock(exchanges);
    let mut streams: Vec<StreamState> = Vec::new();
    let mut out: Vec<BuiltRequest> = Vec::new();
    for (ex, &at) in exchanges.iter().zip(&times) {
        let body = match &ex.body {
            Some(b) => Some(Body::parse(b, &ex.url).map_err(|e| {
                LogError::new(path, &ex.place, e.to_string(), "the request must be an Anthropic Messages, OpenAI Chat Completions or Responses body")
            })?),
            None => None,
        };
        let model = body
            .as_ref()
            .map(|b| b.model.clone())
            .or_else(|| ex.model_hint.clone())
            .unwrap_or_else(|| "unknown".into());
        content.check_bill(path, ex)?;
        let (segs, fit, stream, warm) = segments_of(&tok, ex, body.as_ref(), &mut streams, &out);
        content.add(path, ex, &segs)?;
        let ttfb = match (ex.sent_at_ms, ex.received_at_ms) {
            (Some(s), Some(r)) if r >= s => Some(r - s),
            _ => None,
        };
        let request = Request {
            index: out.len(),
            stream: stream.clone(),
            step: out.len(),
            model: normalize_model(&model),
            sent_at_ms: at,
            segments: segs,
            settings: RequestSettings::default(),
            reply: Vec::new(),
            output_tokens: ex.usage.as_ref().map_or(0, |u| u.output),
        };
        let (body_usage, passes) = split_passes(ex.usage.as_ref());
        let compacted = !passes.is_empty();
        out.push(BuiltRequest {
            place: ex.place.clone(),
            body,
            usage: body_usage,
            verdict: ex.verdict.clone(),
            request,
            fit,
            warm_start: warm,
            server_compaction: false,
            ttfb_ms: ttfb,
        });
        if compacted {
            for (k, p) in passes.iter().enumerate() {
                out.push(server_pass(&tok, ex, &out[out.len() - 1], p, k));
            }
        }
    }
    let mut names: Vec<String> = Vec::new();
    for r in &out {
        if !names.contains(&r.request.stream) {
            names.push(r.request.stream.clone());
        }
    }
    Ok(BuiltLog {
        file: path.to_path_buf(),
        requests: out,
        streams: names,
        timed,
    })
}

/// The usage of the body as sent and the server's later passes: with a `compaction` pass
/// first, the body stands for that pass and each later pass is a request of its own.
fn split_passes(usage: Option<&Usage>) -> (Option<Usage>, Vec<super::Iteration>) {
    let Some(u) = usage else {
        return (None, Vec::new());
    };
    match u.iterations.split_first() {
        Some((first, rest)) if !rest.is_empty() && first.kind == "compaction" => {
            let mut b = u.clone();
            (b.input, b.creation, b.read) = (first.input, first.creation, first.read);
            (Some(b), rest.to_vec())
        }
        _ => (Some(u.clone()), Vec::new()),
    }
}

/// A pass the server ran after compacting: its prompt is the server's summary plus what it
/// kept, content the log does not show, so it is one segment of its own.
fn server_pass(
    tok: &Tokenizer,
    ex: &Exchange,
    sent: &BuiltRequest,
    p: &super::Iteration,
    k: usize,
) -> BuiltRequest {
    let k = k + 1; // the passes after the compaction pass (0)
    let id = xxh3_64_with_seed(format!("{}#{k}", ex.place).as_bytes(), 0xc0);
    let seg = segment(
        tok,
        id,
        Level::Messages,
        Some(Role::User),
        "(server-side compacted context)",
        p.prompt().min(u64::from(u32::MAX)) as u32,
        None,
    );
    let mut request = sent.request.clone();
    request.index = sent.request.index + 1;
    request.step = request.index;
    request.sent_at_ms = sent.request.sent_at_ms + 1;
    request.segments = vec![seg];
    BuiltRequest {
        place: format!("{} + server pass {}", ex.place, k + 1),
        body: None,
        usage: Some(Usage {
            input: p.input,
            creation: p.creation,
            read: p.read,
            ..Usage::default()
        }),
        verdict: None,
        request,
        fit: Fit::Exact,
        warm_start: false,
        server_compaction: true,
        ttfb_ms: None,
    }
}
