//! The library's enums as command-line values: clap's derives live only in the binary, so each
//! enum a flag takes has a mirror here with the same variants, spellings and per-value help
//! (`--help` lists them), and [`parser`] parses the mirror and converts it to the library's type.

use clap::builder::{EnumValueParser, TypedValueParser};
use clap::ValueEnum;

/// Parses a value as the mirror `A` (its spellings and help) and gives the library's `T`.
pub fn parser<A, T>() -> impl TypedValueParser<Value = T>
where
    A: ValueEnum + Clone + Send + Sync + 'static,
    T: From<A> + Clone + Send + Sync + 'static,
{
    EnumValueParser::<A>::new().map(T::from)
}

/// Declares a mirror enum and its conversion to the library enum, variant by variant.
macro_rules! mirror {
    ($(#[$meta:meta])* $name:ident => $lib:path { $($(#[$vmeta:meta])* $v:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
        pub enum $name {
            $($(#[$vmeta])* $v),+
        }

        impl From<$name> for $lib {
            fn from(v: $name) -> Self {
                use $lib as Lib;
                match v {
                    $($name::$v => Lib::$v),+
                }
            }
        }
    };
}

// No doc comments on the variants: clap would print them as each value's help.
mirror! {
    /// `run --format`: [`plancache::export::Format`].
    Format => plancache::export::Format { Csv, Json, Markdown }
}

mirror! {
    /// `account --shared-prefix`: [`plancache::account::Sharing`].
    Sharing => plancache::account::Sharing {
        /// A session starts with the leading block cached when the timeline says an earlier
        /// session's request left it alive.
        Timeline,
        /// Every session starts cold (the sum of lone replays).
        None,
    }
}

mirror! {
    /// `--kind` of a request log: [`plancache::requests::LogKind`].
    LogKind => plancache::requests::LogKind {
        /// VCR cassette (YAML `interactions`).
        Vcr,
        /// claude-trace JSONL (one request/response pair per line).
        ClaudeTrace,
        /// HAR 1.2 (mitmproxy, Charles, browsers).
        Har,
        /// OpenTelemetry OTLP/JSON export (spans or log records).
        Otel,
    }
}

// No doc comments on the variants: clap would print them as each value's help.
mirror! {
    /// `export requests --format`: [`plancache::requests::export::ExportKind`].
    ExportKind => plancache::requests::export::ExportKind { ClaudeTrace, Har }
}

mirror! {
    /// `validate --first-request`: [`plancache::validate::FirstRequest`].
    FirstRequest => plancache::validate::FirstRequest {
        /// Reported, but kept out of the error figures: it may read a prefix an earlier session
        /// wrote, which no replay of this session alone can know.
        Apart,
        /// Counted like every other request.
        Include,
    }
}

mirror! {
    /// `validate --shared-prefix`: [`plancache::validate::SharedPrefix`].
    SharedPrefix => plancache::validate::SharedPrefix {
        /// A cold cache.
        None,
        /// The leading block the main stream's first request read (cross-session sharing) is cached
        /// before the replay starts: the estimate from the first request.
        Recorded,
        /// As `recorded`, and other sessions of the account keep the tools/system entries warm for
        /// the whole replay (the `anthropic` model's `prefix_kept_warm`): they survive idle gaps.
        KeptWarm,
    }
}

mirror! {
    /// `validate --session-cache`: [`plancache::validate::SessionCache`].
    SessionCache => plancache::validate::SessionCache {
        /// One account's cache: every session on one clock, a session reading what an earlier one
        /// left while it lives (the transcripts are one user's sessions).
        Account,
        /// A cache per transcript (sessions of different accounts).
        Apart,
    }
}

mirror! {
    /// `--events` of `import` and `validate`: [`plancache::import::Events`].
    Events => plancache::import::Events {
        /// Only from the transcript's content and timestamps: the billed cache reads and writes are
        /// never read for anything but the report, so a replay predicts what it is scored on.
        Transcript,
        /// As `transcript`, plus breaks placed where the billed cache read dropped within the TTL
        /// with no visible cause; each such event is marked `# inferred from billed cache_read`.
        Billed,
    }
}
