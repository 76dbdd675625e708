//! Requests as ordered segments with real token sequences.
//!
//! Cache semantics live at token, block or breakpoint level, so every piece of a prompt (each tool
//! definition, each system block, each message block) is a [`Segment`] with a stable content id and
//! its token ids. Segments are reference counted so consecutive requests share their storage.

#[cfg(feature = "scanner")]
mod bpe;
#[cfg(feature = "scanner")]
mod chars;
#[cfg(feature = "scanner")]
mod merge;
#[cfg(feature = "scanner")]
mod pretokenize;
#[cfg(feature = "scanner")]
mod ranks;
mod segment;
mod tokenizer;

pub use segment::{ContentId, Level, Request, RequestSettings, Role, Segment, SegmentKind, Ttl};
pub use tokenizer::{Encoding, TokenSource, Tokenizer};

/// Label suffix of a subagent's environment block (the trailing block of its system prompt);
/// breakpoint layouts find the block by it.
pub const ENVIRONMENT_SUFFIX: &str = ":environment";

/// One token id, as produced by the tokenizer or synthesised for count-only content.
pub type TokenId = u32;
