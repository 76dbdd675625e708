//! The kv-cache-tester / semianalysis cc-traces JSON format.

use std::fmt::Write;
use std::path::Path;

use serde::Deserialize;

use super::ids::array_after_key;
use super::{secs_to_ms, StreamBuilder, Trace, TraceError, TraceKind, TraceRequest};

#[derive(Deserialize)]
struct Header {
    id: Option<String>,
    block_size: Option<u64>,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
    requests: Vec<serde_json::Value>,
}

/// A request entry, its ids as `I` (a `Vec<u64>`, or their JSON text on the fast path).
#[derive(Deserialize)]
struct Req<I> {
    t: f64,
    #[serde(default)]
    model: String,
    #[serde(rename = "in")]
    input: u64,
    out: u64,
    hash_ids: I,
    #[serde(default)]
    api_time: f64,
    #[serde(default)]
    think_time: f64,
    ttft: Option<f64>,
}

#[derive(Deserialize)]
struct Sub {
    t: f64,
    agent_id: Option<String>,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
    requests: Vec<serde_json::Value>,
}

/// A kv-cache-tester file read in one pass, straight into typed fields (no `serde_json::Value`
/// tree): the fields the slow path requires are optional here, and any missing one, or any
/// error at all, sends the file to [`parse`], which reports it as before.
#[derive(Deserialize)]
struct FastFile {
    id: Option<String>,
    block_size: Option<u64>,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
    requests: Vec<FastEntry>,
}

/// A request or a subagent entry (`type` says which). The fast path may only be stricter than
/// the slow one, never more lenient: a field is typed as [`Req`] types it, required ones are
/// optional here (missing: the slow path reports it), and a field only a subagent reads is kept
/// as a value (`Some(null)` when present but null) and checked as [`Sub`] would.
/// `hash_ids` is the ordinal its array was given by [`lift_arrays`], whose text
/// [`StreamBuilder`] reads past what it shares with the previous request's.
#[derive(Deserialize)]
struct FastEntry {
    #[serde(rename = "type", default, deserialize_with = "present")]
    kind: Option<serde_json::Value>,
    t: Option<f64>,
    #[serde(default)]
    model: String,
    #[serde(rename = "in")]
    input: Option<u64>,
    out: Option<u64>,
    hash_ids: Option<u64>,
    #[serde(default)]
    api_time: f64,
    #[serde(default)]
    think_time: f64,
    ttft: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    agent_id: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    tool_tokens: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    system_tokens: Option<serde_json::Value>,
    requests: Option<Vec<FastEntry>>,
}

/// A field that is present, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// A subagent's `tool_tokens` / `system_tokens` as [`Sub`] reads them (absent: 0); `None` when
/// [`Sub`] would reject it.
fn sub_tokens(v: Option<serde_json::Value>) -> Option<u64> {
    match v {
        None => Some(0),
        Some(v) => v.as_u64(),
    }
}

impl FastEntry {
    /// The entry as a plain request, if it has what [`Req`] requires, its ids the text of
    /// the next array of `arrays` (counted by `next`), which must be the one the entry names.
    fn req<'t>(self, arrays: &[&'t str], next: &mut usize) -> Option<Req<&'t str>> {
        let ordinal = usize::try_from(self.hash_ids?).ok()?;
        if ordinal != *next {
            return None;
        }
        *next += 1;
        Some(Req {
            t: self.t?,
            model: self.model,
            input: self.input?,
            out: self.out?,
            hash_ids: arrays.get(ordinal)?,
            api_time: self.api_time,
            think_time: self.think_time,
            ttft: self.ttft,
        })
    }

    /// `type` is the string `subagent`.
    fn is_subagent(&self) -> bool {
        matches!(&self.kind, Some(serde_json::Value::String(k)) if k == "subagent")
    }
}

/// A kv-cache-tester file's text with each `"hash_ids": [...]` array (up to the first `]`)
/// replaced by its ordinal (0, 1, ...), and those arrays' texts in order: the JSON reader then
/// skips a short integer instead of scanning every id (three quarters of the bytes of a trace),
/// and the ids are read once, by [`StreamBuilder`].
///
/// A match is not always a request's `hash_ids`: it may be that key in another object, or the
/// end of another key (`"x\"hash_ids":[`). So [`parse_fast`] checks that the requests name the
/// ordinals 0, 1, ... in file order with none left over, and reads every array it takes
/// strictly (unsigned integers, commas, spaces) before the trace is accepted. An array lifted
/// from anywhere else, one cut short by a `]` nested in it, a `hash_ids` of another type, or an
/// integer that stood there in the file sends the file to the slow path.
struct Lifted<'a> {
    /// The text with the arrays replaced.
    text: String,
    /// The arrays' texts (brackets included), in file order.
    arrays: Vec<&'a str>,
}

/// Lifts the arrays out of `text` (see [`Lifted`]).
fn lift_arrays(text: &str) -> Lifted<'_> {
    const KEY: &[u8] = b"\"hash_ids\"";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() / 4);
    let mut arrays = Vec::new();
    // Copied to `out` up to here.
    let mut done = 0;
    for key in memchr::memmem::find_iter(bytes, KEY) {
        // The key, a colon and a bracket, with JSON whitespace around the colon.
        let Some(open) = array_after_key(bytes, key + KEY.len()) else {
            continue;
        };
        if open < done {
            continue;
        }
        let Some(len) = memchr::memchr(b']', &bytes[open..]) else {
            break;
        };
        let close = open + len;
        out.push_str(&text[done..open]);
        let _ = write!(out, "{}", arrays.len());
        arrays.push(&text[open..=close]);
        done = close + 1;
    }
    out.push_str(&text[done..]);
    Lifted { text: out, arrays }
}

/// The file read by [`FastFile`] over its lifted text ([`lift_arrays`]); `None` sends it to the
/// slow path (which reports the error or reads the same trace).
fn parse_fast(file: &Path, text: &str) -> Option<Result<Trace, TraceError>> {
    let lifted = lift_arrays(text);
    let arrays = &lifted.arrays[..];
    // The next ordinal a request must name.
    let mut next = 0;
    let h: FastFile = serde_json::from_str(&lifted.text).ok()?;
    // Each request's ids, read in turn (one buffer, reused).
    let mut ids = Vec::new();
    let block_size = h.block_size.unwrap_or(64).max(1);
    let mut out = Streams::new(h.tool_tokens, h.system_tokens);
    for (index, e) in h.requests.into_iter().enumerate() {
        if e.is_subagent() {
            let agent_id = match e.agent_id {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(a)) => Some(a),
                Some(_) => return None,
            };
            let offset = secs_to_ms(e.t?);
            let (tools, system) = (sub_tokens(e.tool_tokens)?, sub_tokens(e.system_tokens)?);
            let stream = out.subagent(agent_id, tools, system);
            for sub in e.requests? {
                let at = (offset, block_size, file, index);
                let r = sub.req(arrays, &mut next)?;
                if let Err(err) = push_fast(stream, r, at, &mut ids)? {
                    return Some(Err(err));
                }
            }
        } else {
            let at = (0, block_size, file, index);
            let r = e.req(arrays, &mut next)?;
            if let Err(err) = push_fast(&mut out.main, r, at, &mut ids)? {
                return Some(Err(err));
            }
        }
    }
    // Every lifted array belongs to a request.
    if next != arrays.len() {
        return None;
    }
    Some(Ok(out.finish(file, h.id, block_size)))
}

/// Adds the fast path's request `r` to `stream` (`at`: its stream's time offset, the block size,
/// the file and the entry's index), its ids read into `ids` first; `None` when they are not an
/// array of unsigned integers (the slow path then reports it).
fn push_fast<'a>(
    stream: &mut StreamBuilder<'a>,
    r: Req<&'a str>,
    (offset, block_size, file, index): (u64, u64, &Path, usize),
    ids: &mut Vec<u64>,
) -> Option<Result<(), TraceError>> {
    if !stream.read_ids(r.hash_ids, ids) {
        return None;
    }
    Some(
        request(r, ids.len(), offset, block_size, file, index)
            .map(|(r, text)| stream.push(r, ids, text)),
    )
}

/// Parses one kv-cache-tester trace, in one pass when it is well formed.
pub(super) fn parse(file: &Path, text: &str) -> Result<Trace, TraceError> {
    if let Some(r) = parse_fast(file, text) {
        return r;
    }
    parse_slow(file, text)
}

/// Parses one kv-cache-tester trace through `serde_json::Value`, naming the request of any
/// error.
pub(super) fn parse_slow(file: &Path, text: &str) -> Result<Trace, TraceError> {
    let h: Header = serde_json::from_str(text).map_err(|e| TraceError::Format {
        file: file.to_path_buf(),
        detail: e.to_string(),
    })?;
    let block_size = h.block_size.unwrap_or(64).max(1);
    let mut out = Streams::new(h.tool_tokens, h.system_tokens);
    for (index, v) in h.requests.iter().enumerate() {
        let bad = |e: serde_json::Error, hint| TraceError::Request {
            file: file.to_path_buf(),
            index,
            detail: e.to_string(),
            hint,
        };
        if v.get("type").and_then(|t| t.as_str()) == Some("subagent") {
            let s = Sub::deserialize(v)
                .map_err(|e| bad(e, "a subagent entry needs `t` and `requests`"))?;
            let offset = secs_to_ms(s.t);
            let stream = out.subagent(s.agent_id, s.tool_tokens, s.system_tokens);
            for sv in &s.requests {
                let r = Req::<Vec<u64>>::deserialize(sv).map_err(|e| bad(e, REQ_HINT))?;
                let n = r.hash_ids.len();
                let (r, ids) = request(r, n, offset, block_size, file, index)?;
                stream.push(r, &ids, "");
            }
        } else {
            let r = Req::<Vec<u64>>::deserialize(v).map_err(|e| bad(e, REQ_HINT))?;
            let n = r.hash_ids.len();
            let (r, ids) = request(r, n, 0, block_size, file, index)?;
            out.main.push(r, &ids, "");
        }
    }
    Ok(out.finish(file, h.id, block_size))
}

/// The streams of a kv-cache-tester trace as they are read, by both paths: `main`, then each
/// subagent entry in file order.
struct Streams<'a> {
    /// The main conversation (the header's tool and system sizes).
    main: StreamBuilder<'a>,
    /// One stream per subagent entry, in file order.
    subs: Vec<StreamBuilder<'a>>,
}

impl<'a> Streams<'a> {
    fn new(tool_tokens: u64, system_tokens: u64) -> Self {
        Streams {
            main: StreamBuilder::new("main".into(), tool_tokens, system_tokens),
            subs: Vec::new(),
        }
    }

    /// A new subagent stream, named by its `agent_id` or else `subagentN` (N from 1 in file
    /// order), for its requests to be pushed.
    fn subagent(
        &mut self,
        agent_id: Option<String>,
        tool_tokens: u64,
        system_tokens: u64,
    ) -> &mut StreamBuilder<'a> {
        let name = agent_id.unwrap_or_else(|| format!("subagent{}", self.subs.len() + 1));
        self.subs
            .push(StreamBuilder::new(name, tool_tokens, system_tokens));
        self.subs.last_mut().expect("just pushed")
    }

    /// The trace: `id` from the header, else the file's stem.
    fn finish(self, file: &Path, id: Option<String>, block_size: u64) -> Trace {
        let mut streams = vec![self.main.finish()];
        streams.extend(self.subs.into_iter().map(StreamBuilder::finish));
        Trace {
            id: id.unwrap_or_else(|| stem(file)),
            file: file.to_path_buf(),
            kind: TraceKind::KvCacheTester,
            block_size,
            streams,
        }
    }
}

const REQ_HINT: &str = "each request needs `t`, `in`, `out` and `hash_ids`";

/// The request `r`, which has `n_ids` ids, and its ids apart (see [`StreamBuilder::push`]).
fn request<I>(
    r: Req<I>,
    n_ids: usize,
    offset_ms: u64,
    block_size: u64,
    file: &Path,
    index: usize,
) -> Result<(TraceRequest, I), TraceError> {
    if n_ids as u64 * block_size > r.input + block_size {
        return Err(TraceError::Request {
            file: file.to_path_buf(),
            index,
            detail: format!(
                "{n_ids} hash blocks of {block_size} tokens exceed `in` = {}",
                r.input
            ),
            hint: "`hash_ids` holds one id per block of `block_size` prompt tokens",
        });
    }
    let request = TraceRequest {
        sent_at_ms: offset_ms + secs_to_ms(r.t),
        model: r.model,
        input_tokens: r.input,
        output_tokens: r.out,
        hash_ids: Default::default(),
        api_time_ms: secs_to_ms(r.api_time),
        ttft_ms: r.ttft.map(secs_to_ms),
        think_time_ms: secs_to_ms(r.think_time),
    };
    Ok((request, r.hash_ids))
}

pub(super) fn stem(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// [`parse`] of a file that reads as a well-formed kv-cache-tester trace in one pass; `None`
/// for anything else (another format, or an error to report).
pub(super) fn parse_if_well_formed(file: &Path, text: &str) -> Option<Result<Trace, TraceError>> {
    parse_fast(file, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of two main requests and a subagent of one, its pieces spliced in: `head` into
    /// the header, `ids` as the second request's `hash_ids`, `main` into its entries, `sub`
    /// into the subagent entry.
    fn trace(head: &str, ids: &str, main: &str, sub: &str) -> String {
        format!(
            r#"{{"id":"t","block_size":64{head},"requests":[
            {{"t":0.0,"type":"n","model":"m","in":200,"out":5,"hash_ids":[1,2,3]{main}}},
            {{"t":1.5,"type":"n","model":"m","in":300,"out":5,"hash_ids":{ids}{main}}},
            {{"type":"subagent","t":2.0,"agent_id":"a"{sub},"requests":[
                {{"t":0.5,"model":"m","in":128,"out":5,"hash_ids":[9,10]}}]}}]}}"#
        )
    }

    /// The fast path reads what the slow one reads, or leaves the file to it.
    fn same_as_slow(text: &str) -> Option<Trace> {
        let file = Path::new("t.json");
        let slow = parse_slow(file, text);
        match (parse(file, text), &slow) {
            (Ok(a), Ok(b)) => assert_eq!(&a, b),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("fast {a:?}, slow {b:?}\n{text}"),
        }
        slow.ok()
    }

    #[test]
    fn lifted_arrays_read_as_the_slow_path_reads_the_file() {
        // Well formed: read in one pass, every array lifted.
        let plain = trace("", "[1,2,3,4]", "", "");
        assert_eq!(
            lift_arrays(&plain).arrays,
            ["[1,2,3]", "[1,2,3,4]", "[9,10]"]
        );
        let t = same_as_slow(&plain).expect("a good trace");
        assert_eq!(t.streams[0].requests[1].hash_ids.to_vec(), [1, 2, 3, 4]);
        assert!(parse_fast(Path::new("t.json"), &plain).is_some());
        // A file printed with spaces and line breaks is read in one pass as well.
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<serde_json::Value>(&plain).expect("JSON"),
        )
        .expect("printed");
        assert!(pretty.contains("\"hash_ids\": ["));
        assert!(parse_fast(Path::new("t.json"), &pretty).is_some());
        assert_eq!(same_as_slow(&pretty).as_ref(), Some(&t));
        // Spaces in an array are read as well.
        let spaced = trace("", "[ 1, 2,3 ,4 ]", "", "");
        assert!(parse_fast(Path::new("t.json"), &spaced).is_some());
        assert_eq!(same_as_slow(&spaced), Some(t));
        // Anything but unsigned integers, or no array: the slow path (which reports it).
        for ids in [
            "[1,2,3,[4]]",
            "[[1],2]",
            r#"[1,"]",2]"#,
            r#"["]","q"]"#,
            "[1,,2]",
            "[01,2]",
            "[1,2,]",
            "[1,2.5]",
            "null",
            "7",
        ] {
            let text = trace("", ids, "", "");
            assert!(same_as_slow(&text).is_none(), "{ids}");
            assert!(parse_fast(Path::new("t.json"), &text).is_none(), "{ids}");
        }
        // The key elsewhere: in the header, in a subagent entry, in a request's other field,
        // or as text inside a string. Lifted or not, the trace is the slow path's.
        for (head, main, sub) in [
            (r#","hash_ids":[5]"#, "", ""),
            ("", "", r#","hash_ids":[5,6]"#),
            ("", r#","extra":{"hash_ids":[5]}"#, ""),
            ("", r#","x\"hash_ids":[5]"#, ""),
            (r#","note":"\"hash_ids\":[5]""#, "", ""),
        ] {
            let text = trace(head, "[1,2,3,4]", main, sub);
            let t = same_as_slow(&text).expect("a good trace");
            assert_eq!(t.streams[1].requests[0].hash_ids.to_vec(), [9, 10]);
        }
    }
}
