//! Per-model cache parameters as data: documented defaults, overridable from a TOML file
//! (`--cache-config FILE`) or built through the library API.
//!
//! The file has one table per model name; keys left out keep that model's defaults:
//!
//! ```toml
//! [anthropic]
//! message_ttl = "5m"        # Claude Code before 2.1, subagent streams
//! prewarmed_prefix = true   # tools+system written by earlier sessions of the account
//!
//! [openai]
//! idle_ttl = "24h"          # prompt_cache_retention = "24h"
//! max_age = "24h"
//! max_age_from = "last-use" # or "first-write"
//!
//! [radix]
//! cache_last_token = false  # SGLang without the overlap scheduler
//!
//! [paged]
//! block_size = 32
//! capacity_blocks = 4096
//! ```

use std::path::Path;

pub use super::registry::CacheConfig;
use super::registry::{self, REGISTRY};
use super::CacheError;
use crate::util::ScenarioError;

impl CacheConfig {
    /// Parses a cache-config file's text; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, CacheError> {
        let file = Path::new(origin);
        let doc: toml::Table = text
            .parse()
            .map_err(|e| ScenarioError::new(file, None, format!("invalid TOML: {e}")))?;
        let mut cfg = CacheConfig::default();
        for (name, value) in &doc {
            let toml::Value::Table(t) = value else {
                return Err(ScenarioError::new(
                    file,
                    None,
                    format!("`{name}` must be a table like [{name}]"),
                )
                .with_hint(format!(
                    "one table per cache model: {}",
                    super::CACHE_NAMES.join(", ")
                ))
                .into());
            };
            let Some(entry) = registry::entry(name).filter(|e| e.table) else {
                let known: Vec<&str> = REGISTRY
                    .iter()
                    .filter(|e| e.table)
                    .map(|e| e.name)
                    .collect();
                return Err(ScenarioError::new(
                    file,
                    None,
                    format!("unknown cache model table [{name}]"),
                )
                .with_hint(format!("known: {}", known.join(", ")))
                .into());
            };
            entry.overlay(&mut cfg, t).map_err(|e| {
                ScenarioError::new(file, None, e)
                    .with_hint("see docs/cache-models.md for the keys of each model")
            })?;
        }
        for entry in REGISTRY {
            entry
                .check(&cfg)
                .map_err(|e| ScenarioError::new(file, Some(format!("[{}]", entry.name)), e))?;
        }
        Ok(cfg)
    }

    /// Reads a cache-config file.
    pub fn from_file(path: &Path) -> Result<Self, CacheError> {
        let text = crate::budget::read_text(path, "cache config")
            .map_err(|e| ScenarioError::new(path, None, e))?;
        Self::from_toml_str(&text, &path.display().to_string())
    }
}
