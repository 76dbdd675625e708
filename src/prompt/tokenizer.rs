use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_64_with_seed, Xxh3};

use super::{ContentId, Level, Segment, SegmentKind, TokenId, Ttl};

/// The BPE encodings plancache can tokenize with (both compiled into the binary by tiktoken-rs).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// `o200k_base` (GPT-4o and later; the default).
    #[default]
    O200kBase,
    /// `cl100k_base` (GPT-4 and GPT-3.5).
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name (`o200k_base`, `cl100k_base`).
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

/// Where a segment's tokens come from: real text, or only a size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TokenSource {
    /// Real text, tokenized with the encoding.
    Text(String),
    /// A size only: tokens are synthesised deterministically from the content id.
    Count(u32),
}

/// Memo key: (content hash, token count for count-only content or `u32::MAX` for text).
type MemoKey = (u64, u32);

/// The memo's hasher: its keys are xxh3 hashes already, so the first word is the hash (SipHash
/// of the key showed in profiles of `account`, where every segment of every replay looks it up).
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = self
            .0
            .wrapping_add(u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
}

type Memo = HashMap<MemoKey, Arc<[TokenId]>, std::hash::BuildHasherDefault<KeyHasher>>;

/// Segment memo key: the content's [`MemoKey`] and, for text (whose id leaves the label out),
/// the label's hash (0 for count-only content, whose id hashes the label already).
type SegmentKey = (u64, u32, u64);

type SegmentMemo = HashMap<SegmentKey, Arc<Segment>, std::hash::BuildHasherDefault<KeyHasher>>;

/// Vocabulary size used for synthetic token ids (o200k_base's size, so ids look like real ones).
const SYNTHETIC_VOCAB: u64 = 200_019;

/// Tokenizes each distinct content once and hands out shared token storage.
///
/// The encoder is loaded lazily, on the first segment that has text: a count-only scenario never
/// pays the encoder's load time (about 0.2 s for o200k_base in release builds).
#[derive(Debug, Default)]
pub struct Tokenizer {
    encoding: Encoding,
    memo: Mutex<Memo>,
    /// Every segment built by [`Tokenizer::segment`], shared by every later request (and
    /// replay) that builds the same one: a replay's messages then cost a lookup, not an
    /// allocation and a free each.
    segments: Mutex<SegmentMemo>,
}

impl Tokenizer {
    /// A tokenizer for `encoding` with an empty memo; the encoder loads on first use.
    pub fn new(encoding: Encoding) -> Self {
        Tokenizer {
            encoding,
            memo: Mutex::new(Memo::default()),
            segments: Mutex::new(SegmentMemo::default()),
        }
    }

    /// The encoding it tokenizes with.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Content id of a source within a namespace (e.g. `tool:Read`, `step7:result`). Text content
    /// is identified by its bytes alone, so equal text is equal content wherever it appears;
    /// count-only content is identified by its namespace and size.
    pub fn content_id(namespace: &str, source: &TokenSource) -> ContentId {
        match source {
            TokenSource::Text(text) => xxh3_64_with_seed(text.as_bytes(), 0x7465_7874),
            TokenSource::Count(n) => {
                // The hash of `namespace` followed by the size's bytes, streamed (equal to
                // hashing the joined bytes, without building them: called for every segment).
                let mut h = Xxh3::with_seed(0x636f_756e);
                h.update(namespace.as_bytes());
                h.update(&n.to_le_bytes());
                h.digest()
            }
        }
    }

    /// The token sequence of a source, tokenized or synthesised once and then shared. `id` must
    /// be the source's [`Tokenizer::content_id`].
    pub fn tokens(&self, id: ContentId, source: &TokenSource) -> Arc<[TokenId]> {
        // Text ids depend on the bytes alone (see `content_id`), so the id is the memo key.
        let key = match source {
            TokenSource::Text(_) => (id, u32::MAX),
            TokenSource::Count(n) => (id, *n),
        };
        if let Some(hit) = self
            .memo
            .lock()
            .map(|m| m.get(&key).cloned())
            .ok()
            .flatten()
        {
            return hit;
        }
        let tokens: Arc<[TokenId]> = match source {
            TokenSource::Text(text) => self.encode(text).into(),
            TokenSource::Count(n) => synthetic_tokens(id, *n).into(),
        };
        if let Ok(mut memo) = self.memo.lock() {
            memo.insert(key, tokens.clone());
        }
        tokens
    }

    /// The segment of `source` labelled `label`, built once and then shared: equal arguments
    /// give the same `Arc` (its id is [`Tokenizer::content_id`] of the label and source).
    pub fn segment(
        &self,
        level: Level,
        kind: SegmentKind,
        label: &str,
        source: TokenSource,
        breakpoint: Option<Ttl>,
    ) -> Arc<Segment> {
        let id = Self::content_id(label, &source);
        let key = match &source {
            TokenSource::Text(_) => (id, u32::MAX, xxh3_64_with_seed(label.as_bytes(), 0)),
            TokenSource::Count(n) => (id, *n, 0),
        };
        let same = |s: &Segment| {
            s.level == level && s.kind == kind && s.breakpoint == breakpoint && s.label == label
        };
        let memo = self.segments.lock().ok();
        if let Some(hit) = memo.as_ref().and_then(|m| m.get(&key).filter(|s| same(s))) {
            return hit.clone();
        }
        drop(memo);
        let segment = Arc::new(Segment {
            id,
            level,
            kind,
            label: label.to_string(),
            tokens: self.tokens(id, &source),
            breakpoint,
        });
        // A key held by another segment (a label built with two kinds) keeps its first one.
        if let Ok(mut memo) = self.segments.lock() {
            memo.entry(key).or_insert_with(|| segment.clone());
        }
        segment
    }

    /// Number of tokens of a source.
    pub fn count(&self, source: &TokenSource) -> usize {
        match source {
            TokenSource::Count(n) => *n as usize,
            TokenSource::Text(text) => self.count_text(text),
        }
    }

    /// Number of tokens of `text`, tokenized once per distinct text (shared with
    /// [`Tokenizer::tokens`]) and without copying it when it was seen before.
    pub fn count_text(&self, text: &str) -> usize {
        let key = (xxh3_64_with_seed(text.as_bytes(), 0x7465_7874), u32::MAX);
        if let Some(n) = self
            .memo
            .lock()
            .ok()
            .and_then(|m| m.get(&key).map(|t| t.len()))
        {
            return n;
        }
        let tokens: Arc<[TokenId]> = self.encode(text).into();
        let n = tokens.len();
        if let Ok(mut memo) = self.memo.lock() {
            memo.insert(key, tokens);
        }
        n
    }

    /// Encodes text with plancache's own pre-tokenizer over tiktoken-rs's ranks (the default,
    /// feature `scanner`), bpe-openai (`--features fast-bpe`, a 3x larger binary) or tiktoken-rs
    /// itself (`--no-default-features --features tiktoken`): all three give identical ids
    /// (tests/tokenizer_ids.rs); speeds in docs/performance.md.
    fn encode(&self, text: &str) -> Vec<TokenId> {
        #[cfg(feature = "fast-bpe")]
        {
            let bpe = match self.encoding {
                Encoding::O200kBase => bpe_openai::o200k_base(),
                Encoding::Cl100kBase => bpe_openai::cl100k_base(),
            };
            bpe.encode(text)
        }
        #[cfg(all(not(feature = "fast-bpe"), feature = "scanner"))]
        {
            self.encode_scanner(text)
        }
        #[cfg(all(
            not(feature = "fast-bpe"),
            not(feature = "scanner"),
            feature = "tiktoken"
        ))]
        {
            let bpe = match self.encoding {
                Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
                Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            };
            bpe.encode_ordinary(text)
        }
    }

    /// Encodes `text` afresh, without the memo (for benchmarks and the id comparison).
    pub fn encode_uncached(&self, text: &str) -> Vec<TokenId> {
        self.encode(text)
    }

    /// The ids of `text` from plancache's own scanner whatever backend the build encodes with
    /// (benchmarks compare it with bpe-openai in a `fast-bpe` build); no memo.
    #[cfg(feature = "scanner")]
    pub fn encode_scanner(&self, text: &str) -> Vec<TokenId> {
        match self.encoding {
            Encoding::O200kBase => super::bpe::Encoder::o200k_base().encode(text),
            Encoding::Cl100kBase => super::bpe::Encoder::cl100k_base().encode(text),
        }
    }

    /// Which library encodes text in this build.
    pub fn backend() -> &'static str {
        if cfg!(feature = "fast-bpe") {
            "bpe-openai"
        } else if cfg!(feature = "scanner") {
            "plancache-scanner"
        } else {
            "tiktoken-rs"
        }
    }
}

#[cfg(not(any(feature = "fast-bpe", feature = "scanner", feature = "tiktoken")))]
compile_error!(
    "plancache needs a tokenizer: enable feature `scanner` (default), `tiktoken` or `fast-bpe`"
);

/// Deterministic pseudo-token ids for content known only by its size.
pub fn synthetic_tokens(id: ContentId, n: u32) -> Vec<TokenId> {
    (0..n as u64)
        .map(|i| (xxh3_64_with_seed(&i.to_le_bytes(), id) % SYNTHETIC_VOCAB) as TokenId)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_only_tokens_are_deterministic_and_distinct_per_content() {
        let t = Tokenizer::new(Encoding::O200kBase);
        let a = TokenSource::Count(50);
        let id_a = Tokenizer::content_id("tool:Read", &a);
        let id_b = Tokenizer::content_id("tool:Edit", &a);
        assert_ne!(id_a, id_b);
        let x = t.tokens(id_a, &a);
        let y = t.tokens(id_a, &a);
        assert_eq!(x.len(), 50);
        assert!(Arc::ptr_eq(&x, &y), "memoized content shares storage");
        assert_ne!(&x[..], &t.tokens(id_b, &a)[..]);
    }

    #[test]
    fn segments_are_built_once_per_label_and_content() {
        let t = Tokenizer::new(Encoding::O200kBase);
        let user = SegmentKind::Message(super::super::Role::User);
        let make = |label: &str, source: TokenSource, kind: SegmentKind| {
            t.segment(Level::Messages, kind, label, source, None)
        };
        let a = make("step1:user", TokenSource::Text("hi".into()), user.clone());
        let b = make("step1:user", TokenSource::Text("hi".into()), user.clone());
        assert!(Arc::ptr_eq(&a, &b), "equal arguments share the segment");
        let c = make("step2:user", TokenSource::Text("hi".into()), user.clone());
        assert!(!Arc::ptr_eq(&a, &c) && Arc::ptr_eq(&a.tokens, &c.tokens));
        assert_eq!((c.label.as_str(), c.id), ("step2:user", a.id));
        let d = make(
            "step1:user",
            TokenSource::Text("hi".into()),
            SegmentKind::Reminder,
        );
        assert_eq!(d.kind, SegmentKind::Reminder);
        let e = make("step1:user", TokenSource::Count(2), user);
        assert!(!Arc::ptr_eq(&a, &e) && e.id != a.id && e.len() == 2);
    }

    #[test]
    fn count_only_ids_hash_the_namespace_then_the_size() {
        // The id is xxh3 (seed "coun") of the namespace's bytes followed by the size's four
        // little-endian bytes: the streamed hash must equal hashing the joined bytes.
        let mut joined = b"step7:result".to_vec();
        joined.extend_from_slice(&300u32.to_le_bytes());
        assert_eq!(
            Tokenizer::content_id("step7:result", &TokenSource::Count(300)),
            xxh3_64_with_seed(&joined, 0x636f_756e)
        );
    }

    #[test]
    fn text_is_tokenized_with_o200k() {
        let t = Tokenizer::new(Encoding::O200kBase);
        let src = TokenSource::Text("hello world".into());
        let toks = t.tokens(Tokenizer::content_id("", &src), &src);
        // o200k_base: "hello" = 24912, " world" = 2375.
        assert_eq!(&toks[..], &[24912, 2375]);
    }

    /// The default encoder must give the same ids as tiktoken-rs (a dev-dependency, so this runs
    /// in every build; tests/tokenizer_ids.rs checks a larger corpus).
    #[test]
    fn encoder_ids_match_tiktoken() {
        let text = "fn main() { println!(\"héllo, wörld\"); }\n{\"id\": 42, \"ok\": true}\nThe cached prefix breaks.  \t\n";
        for (enc, tik) in [
            (Encoding::O200kBase, tiktoken_rs::o200k_base_singleton()),
            (Encoding::Cl100kBase, tiktoken_rs::cl100k_base_singleton()),
        ] {
            let t = Tokenizer::new(enc);
            assert_eq!(t.encode(text), tik.encode_ordinary(text), "{enc:?}");
        }
    }
}
