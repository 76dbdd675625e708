//! A transcript made ready to replay: its streams imported as scenarios (in start order), loaded
//! as sessions, with the cache parameters its harness ran with. `validate` and `account` both
//! start here.

use std::path::Path;
use std::sync::Arc;

use super::{harness_config, ValidateError};
use crate::cache::CacheConfig;
use crate::import::{build_scenarios_with, ImportOptions, ImportedScenario, Item, Transcript};
use crate::prompt::Tokenizer;
use crate::scenario::Session;

/// One transcript, imported once and replayed as often as asked.
pub struct Prepared {
    /// Its streams as scenarios, in the order they started.
    pub imported: Vec<ImportedScenario>,
    /// The same streams loaded (checked and tokenised), index for index.
    pub sessions: Vec<Session>,
    /// The cache parameters the harness ran with (each stream's TTL class).
    pub config: CacheConfig,
    /// Epoch ms of the transcript's earliest record: the imported send times count from it.
    pub origin_ms: u64,
}

/// Imports and loads every stream of `t`. A stream that does not load (an illegal step, an
/// unknown model) fails the transcript, naming the stream.
pub fn prepare(
    t: &Transcript,
    opts: &ImportOptions,
    base: &CacheConfig,
    tokenizer: &Arc<Tokenizer>,
) -> Result<Prepared, ValidateError> {
    // The caller's tokenizer when it counts in the import's encoding: one memo for every
    // transcript of a run (an account tokenizes each distinct text once).
    let mut imported = if tokenizer.encoding() == opts.encoding {
        build_scenarios_with(t, opts, tokenizer)
    } else {
        build_scenarios_with(t, opts, &Tokenizer::new(opts.encoding))
    };
    imported.sort_by_key(|s| s.requests.first().map_or(u64::MAX, |r| r.sent_at_ms));
    let config = harness_config(base, &imported);
    let sessions = imported
        .iter()
        .map(|imp| load(t, imp, tokenizer))
        .collect::<Result<Vec<_>, ValidateError>>()?;
    let origin_ms = t
        .streams
        .iter()
        .flat_map(|s| s.items.iter().map(Item::at_ms))
        .min()
        .unwrap_or(0);
    Ok(Prepared {
        imported,
        sessions,
        config,
        origin_ms,
    })
}

fn load(
    t: &Transcript,
    imp: &ImportedScenario,
    tokenizer: &Arc<Tokenizer>,
) -> Result<Session, ValidateError> {
    let text = imp.to_toml(&t.source)?;
    let label = format!("{}#{}", t.source, imp.stream);
    Session::new(
        imp.scenario.clone(),
        Path::new(&label),
        &text,
        tokenizer.clone(),
    )
    .map_err(ValidateError::from)
}
