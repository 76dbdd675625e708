//! Prices and cache rules per model: data, not code.
//!
//! The bundled table (`data/pricing.toml`) is compiled into the binary; `--pricing FILE` adds or
//! replaces models by name.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::CacheOutcome;

const BUNDLED: &str = include_str!("../../data/pricing.toml");

/// One model's prices (USD per million tokens) and cache rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub name: String,
    pub provider: String,
    /// Base (uncached) input price.
    pub input: f64,
    pub output: f64,
    /// Multiplier of the base input price for tokens written with the 5-minute (or only) TTL.
    pub write_5m: f64,
    /// Multiplier for tokens written with the 1-hour TTL.
    #[serde(default = "default_write_1h")]
    pub write_1h: f64,
    /// Multiplier for tokens read from the cache.
    pub read: f64,
    /// Minimum cacheable prefix length in tokens.
    #[serde(default)]
    pub min_cacheable: u64,
    /// Storage of an explicit cache object (Gemini `cachedContents`), USD per million tokens
    /// per hour of its TTL; 0 where the provider bills no storage.
    #[serde(default)]
    pub storage_per_mtok_hour: f64,
    /// Where the figures come from.
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub date: String,
    /// Cache lifetimes the provider offers for this model (informational, e.g. `5m, 1h`).
    #[serde(default)]
    pub ttls: String,
}

fn default_write_1h() -> f64 {
    2.0
}

impl ModelPrice {
    /// Cost of one request in USD: uncached input at the base price, writes at their
    /// multipliers, reads at the read multiplier, output at the output price.
    pub fn cost(&self, outcome: &CacheOutcome, output_tokens: u64) -> f64 {
        self.cost_billed(outcome, output_tokens, true)
    }

    /// As [`cost`](Self::cost); with `charges_writes` false, written tokens are billed as plain
    /// input (OpenAI before GPT-5.6 and self-hosted engines charge nothing extra for writes).
    pub fn cost_billed(
        &self,
        outcome: &CacheOutcome,
        output_tokens: u64,
        charges_writes: bool,
    ) -> f64 {
        let (w5, w1) = if charges_writes {
            (self.write_5m, self.write_1h)
        } else {
            (1.0, 1.0)
        };
        let plain = outcome.recomputed_tokens() - outcome.cache_write_tokens();
        let input_units = plain as f64
            + outcome.write_5m_tokens as f64 * w5
            + outcome.write_1h_tokens as f64 * w1
            + outcome.cached_tokens as f64 * self.read;
        (input_units * self.input + output_tokens as f64 * self.output) / 1_000_000.0
            + self.storage_cost(outcome.storage_token_seconds)
    }

    /// Cost in USD of storing an explicit cache object for `token_seconds` (tokens x seconds).
    pub fn storage_cost(&self, token_seconds: u64) -> f64 {
        token_seconds as f64 / 3600.0 * self.storage_per_mtok_hour / 1_000_000.0
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[serde(default)]
    version: String,
    models: Vec<ModelPrice>,
}

/// All known models by name.
#[derive(Debug, Clone)]
pub struct PriceTable {
    pub version: String,
    models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// The table compiled into the binary.
    pub fn bundled() -> Self {
        let file: TableFile = toml::from_str(BUNDLED).expect("bundled pricing table is valid TOML");
        let mut table = PriceTable {
            version: file.version,
            models: BTreeMap::new(),
        };
        for m in file.models {
            table.models.insert(m.name.clone(), m);
        }
        table
    }

    /// Adds or replaces models from a user file.
    pub fn merge_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read pricing file: {e}", path.display()))?;
        let file: TableFile = toml::from_str(&text).map_err(|e| {
            format!(
                "{}: invalid pricing file: {e}\nhint: each [[models]] entry needs name, provider, input, output, write_5m, read",
                path.display()
            )
        })?;
        for m in file.models {
            self.models.insert(m.name.clone(), m);
        }
        if !file.version.is_empty() {
            self.version = file.version;
        }
        Ok(())
    }

    pub fn get(&self, model: &str) -> Option<&ModelPrice> {
        self.models.get(model)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }
}
