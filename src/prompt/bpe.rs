//! The default encoder (feature `scanner`): plancache's own pre-tokenizer
//! ([`super::pretokenize`]) cuts the text, each piece is looked up in the encoding's ranks and,
//! when it is not one token, byte-pair merged ([`super::merge`]). The ranks are tiktoken-rs's:
//! its compiled-in rank file, read back token by token through `CoreBPE::decode_bytes`.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use super::chars::CharTable;
use super::merge::merge;
use super::pretokenize::{split, Pattern};
use super::ranks::Ranks;
use super::TokenId;

/// One encoding: its split pattern and its ranks.
pub struct Encoder {
    /// The split pattern of the encoding.
    pattern: Pattern,
    /// Token bytes → id, every ordinary token of the encoding (no special tokens).
    ranks: Ranks,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("pattern", &self.pattern)
            .field("ranks", &self.ranks.len())
            .finish()
    }
}

/// The character classes, shared by both encodings.
fn table() -> &'static CharTable {
    static TABLE: OnceLock<CharTable> = OnceLock::new();
    TABLE.get_or_init(CharTable::new)
}

impl Encoder {
    /// The o200k_base encoder, loaded once per process.
    pub fn o200k_base() -> &'static Encoder {
        static ENC: OnceLock<Encoder> = OnceLock::new();
        ENC.get_or_init(|| Encoder::new(Pattern::O200k, tiktoken_rs::o200k_base_singleton()))
    }

    /// The cl100k_base encoder, loaded once per process.
    pub fn cl100k_base() -> &'static Encoder {
        static ENC: OnceLock<Encoder> = OnceLock::new();
        ENC.get_or_init(|| Encoder::new(Pattern::Cl100k, tiktoken_rs::cl100k_base_singleton()))
    }

    /// Reads the ordinary tokens of `core` back, id by id: they are numbered from 0 without
    /// gaps (199,998 for o200k_base, 100,256 for cl100k_base); the first id that does not decode
    /// ends them (the special tokens come after a gap).
    fn new(pattern: Pattern, core: &CoreBPE) -> Encoder {
        let size = match pattern {
            Pattern::O200k => 199_998,
            Pattern::Cl100k => 100_256,
        };
        let tokens = (0..)
            .map_while(|id| core.decode_bytes(&[id]).ok())
            .take(size);
        Encoder {
            pattern,
            ranks: Ranks::new(size, tokens),
        }
    }

    /// Number of ordinary tokens.
    #[cfg(test)]
    fn vocabulary(&self) -> usize {
        self.ranks.len()
    }

    /// The ids of `text`, as tiktoken's `encode_ordinary` gives them.
    pub fn encode(&self, text: &str) -> Vec<TokenId> {
        let mut out = Vec::with_capacity(text.len() / 4 + 1);
        split(table(), self.pattern, text, |piece| {
            match self.ranks.get(piece) {
                Some(id) => out.push(id),
                None => merge(&self.ranks, piece, &mut out),
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_the_ordinary_tokens_without_the_special_ones() {
        // o200k_base: 199,998 ordinary tokens (ids 0..199,997; <|endoftext|> is 199,999);
        // cl100k_base: 100,256 (ids 0..100,255; <|endoftext|> is 100,257).
        assert_eq!(Encoder::o200k_base().vocabulary(), 199_998);
        assert_eq!(Encoder::cl100k_base().vocabulary(), 100_256);
        // ... and the next id is no ordinary token of tiktoken-rs's (`new` stops there).
        assert!(tiktoken_rs::o200k_base_singleton()
            .decode_bytes(&[199_998])
            .is_err());
        assert!(tiktoken_rs::cl100k_base_singleton()
            .decode_bytes(&[100_256])
            .is_err());
        // A special token's text is ordinary text: split and merged, never its special id.
        let ids = Encoder::cl100k_base().encode("<|endoftext|>");
        assert!(ids.len() > 1 && !ids.contains(&100_257), "{ids:?}");
    }

    #[test]
    fn known_ids() {
        // o200k_base: "hello" = 24912, " world" = 2375 (as in tokenizer.rs's test).
        assert_eq!(Encoder::o200k_base().encode("hello world"), [24912, 2375]);
        assert_eq!(
            Encoder::cl100k_base().encode("hello world"),
            tiktoken_rs::cl100k_base_singleton().encode_ordinary("hello world")
        );
    }
}
