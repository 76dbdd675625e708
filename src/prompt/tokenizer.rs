use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::{ContentId, TokenId};

/// The BPE encodings plancache can tokenize with (both compiled into the binary by tiktoken-rs).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    #[default]
    O200kBase,
    Cl100kBase,
}

impl Encoding {
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
    Text(String),
    /// A size only: tokens are synthesised deterministically from the content id.
    Count(u32),
}

/// Memo key: (content hash, token count for count-only content or `u32::MAX` for text).
type MemoKey = (u64, u32);

/// Vocabulary size used for synthetic token ids (o200k_base's size, so ids look like real ones).
const SYNTHETIC_VOCAB: u64 = 200_019;

/// Tokenizes each distinct content once and hands out shared token storage.
///
/// The encoder is loaded lazily, on the first segment that has text: a count-only scenario never
/// pays the encoder's load time (about 0.2 s for o200k_base in release builds).
#[derive(Debug, Default)]
pub struct Tokenizer {
    encoding: Encoding,
    memo: Mutex<HashMap<MemoKey, Arc<[TokenId]>>>,
}

impl Tokenizer {
    pub fn new(encoding: Encoding) -> Self {
        Tokenizer {
            encoding,
            memo: Mutex::new(HashMap::new()),
        }
    }

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
                let mut key = namespace.as_bytes().to_vec();
                key.extend_from_slice(&n.to_le_bytes());
                xxh3_64_with_seed(&key, 0x636f_756e)
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

    /// Number of tokens of a source.
    pub fn count(&self, source: &TokenSource) -> usize {
        match source {
            TokenSource::Count(n) => *n as usize,
            TokenSource::Text(_) => self.tokens(Self::content_id("", source), source).len(),
        }
    }

    /// Encodes text with tiktoken-rs (default) or bpe-openai (feature `fast-bpe`); both give
    /// identical ids.
    fn encode(&self, text: &str) -> Vec<TokenId> {
        #[cfg(feature = "fast-bpe")]
        {
            let bpe = match self.encoding {
                Encoding::O200kBase => bpe_openai::o200k_base(),
                Encoding::Cl100kBase => bpe_openai::cl100k_base(),
            };
            bpe.encode(text)
        }
        #[cfg(not(feature = "fast-bpe"))]
        {
            let bpe = match self.encoding {
                Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
                Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            };
            bpe.encode_ordinary(text)
        }
    }
}

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
    fn text_is_tokenized_with_o200k() {
        let t = Tokenizer::new(Encoding::O200kBase);
        let src = TokenSource::Text("hello world".into());
        let toks = t.tokens(Tokenizer::content_id("", &src), &src);
        // o200k_base: "hello" = 24912, " world" = 2375.
        assert_eq!(&toks[..], &[24912, 2375]);
    }

    /// The `fast-bpe` encoder must give the same ids as tiktoken-rs.
    #[cfg(feature = "fast-bpe")]
    #[test]
    fn bpe_openai_ids_match_tiktoken() {
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
