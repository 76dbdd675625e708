//! The errors of the cache layer: a model's parameters out of range, a cache-config or price
//! file (or `--price` spec) that is not valid, a name no model has.

use crate::util::ScenarioError;

/// Why a cache model could not be configured or built, or a price not read.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A parameter that must be positive is 0.
    #[error("{key} must be at least 1")]
    Zero {
        /// The parameter's key in its `[model]` table.
        key: &'static str,
    },
    /// `anthropic`'s Claude Code layout with a system TTL shorter than the messages' TTL.
    #[error("system_ttl {system} is shorter than message_ttl {message}: the API requires longer TTLs first")]
    TtlOrder {
        /// The system TTL, as written.
        system: &'static str,
        /// The messages' TTL, as written.
        message: &'static str,
    },
    /// A model's parameters failed their check when it was built.
    #[error("cache model `{name}`: {source}")]
    Model {
        /// The model.
        name: &'static str,
        /// What is wrong with its parameters.
        source: Box<CacheError>,
    },
    /// A `[section]` table whose keys do not fit the model's parameters.
    #[error("[{section}]: {reason}")]
    Section {
        /// The model's table.
        section: String,
        /// What does not fit (the TOML deserializer's words).
        reason: String,
    },
    /// A `--cache` name no model has.
    #[error("unknown cache model `{name}`; known models: {}", super::CACHE_NAMES.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// A cache-config or price file that is not valid: the file, the place, what, the fix.
    #[error(transparent)]
    File(Box<ScenarioError>),
    /// A price or multiplier no cost can be computed with.
    #[error("`{key}` is {value}; prices and multipliers must be finite numbers of at least 0")]
    NotFinite {
        /// The price's key.
        key: &'static str,
        /// Its value.
        value: f64,
    },
    /// A model priced with a context window of 0 tokens.
    #[error("`context_window` is 0; give the model's limit in tokens or leave it out")]
    NoContext,
    /// A `--price` spec that is not valid.
    #[error("--price `{spec}`: {message}{}", hint_line(.hint))]
    Spec {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        message: String,
        /// The fix, when one is shown.
        hint: Option<&'static str>,
    },
}

impl From<ScenarioError> for CacheError {
    fn from(e: ScenarioError) -> Self {
        CacheError::File(Box::new(e))
    }
}

/// `\n  hint: ...` when there is a hint.
fn hint_line(hint: &Option<&'static str>) -> String {
    hint.map(|h| format!("\n  hint: {h}")).unwrap_or_default()
}
