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

use serde::{de::DeserializeOwned, Serialize};

use super::anthropic::BreakpointConfig;
use super::gemini::ExplicitConfig;
use super::openai::OpenAiConfig;
use super::paged::PagedConfig;
use super::radix::RadixConfig;
use super::unit_prefix::UnitPrefixConfig;

/// Parameters of every cache model.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheConfig {
    pub anthropic: BreakpointConfig,
    pub anthropic_auto: BreakpointConfig,
    pub anthropic_explicit: BreakpointConfig,
    pub openai: OpenAiConfig,
    pub openai_5_6: BreakpointConfig,
    pub paged: PagedConfig,
    pub radix: RadixConfig,
    /// Gemini implicit caching.
    pub gemini: UnitPrefixConfig,
    /// Gemini explicit caching (`cachedContents`).
    pub gemini_explicit: ExplicitConfig,
    /// DeepSeek's disk cache.
    pub deepseek: UnitPrefixConfig,
    /// Anthropic models on Amazon Bedrock.
    pub bedrock: BreakpointConfig,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            anthropic: BreakpointConfig::default(),
            anthropic_auto: BreakpointConfig::automatic(),
            anthropic_explicit: BreakpointConfig::explicit(),
            openai: OpenAiConfig::default(),
            openai_5_6: BreakpointConfig::openai_5_6(),
            paged: PagedConfig::default(),
            radix: RadixConfig::default(),
            gemini: super::gemini::implicit_config(),
            gemini_explicit: ExplicitConfig::default(),
            deepseek: super::deepseek::default_config(),
            bedrock: BreakpointConfig::bedrock(),
        }
    }
}

/// Overlays the keys of `table` on `base` (a profile's defaults) and checks them.
fn overlay<T: Serialize + DeserializeOwned>(
    base: &T,
    table: &toml::Table,
    section: &str,
) -> Result<T, String> {
    let mut merged = toml::Table::try_from(base)
        .map_err(|e| format!("[{section}]: cannot represent defaults: {e}"))?;
    for (k, v) in table {
        merged.insert(k.clone(), v.clone());
    }
    merged.try_into().map_err(|e| format!("[{section}]: {e}"))
}

impl CacheConfig {
    /// Parses a cache-config file's text; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, String> {
        let doc: toml::Table = text
            .parse()
            .map_err(|e| format!("{origin}: invalid TOML: {e}"))?;
        let mut cfg = CacheConfig::default();
        for (name, value) in &doc {
            let toml::Value::Table(t) = value else {
                return Err(format!(
                    "{origin}: `{name}` must be a table like [{name}]\n  hint: one table per cache model: {}",
                    super::CACHE_NAMES.join(", ")
                ));
            };
            let err = |e: String| {
                format!(
                    "{origin}: {e}\n  hint: see docs/cache-models.md for the keys of each model"
                )
            };
            match name.as_str() {
                "anthropic" => cfg.anthropic = overlay(&cfg.anthropic, t, name).map_err(err)?,
                "anthropic-auto" => {
                    cfg.anthropic_auto = overlay(&cfg.anthropic_auto, t, name).map_err(err)?
                }
                "anthropic-explicit" => {
                    cfg.anthropic_explicit =
                        overlay(&cfg.anthropic_explicit, t, name).map_err(err)?
                }
                "openai" => cfg.openai = overlay(&cfg.openai, t, name).map_err(err)?,
                "openai-5.6" => cfg.openai_5_6 = overlay(&cfg.openai_5_6, t, name).map_err(err)?,
                "paged" => cfg.paged = overlay(&cfg.paged, t, name).map_err(err)?,
                "radix" => cfg.radix = overlay(&cfg.radix, t, name).map_err(err)?,
                "gemini" => cfg.gemini = overlay(&cfg.gemini, t, name).map_err(err)?,
                "gemini-explicit" => {
                    cfg.gemini_explicit = overlay(&cfg.gemini_explicit, t, name).map_err(err)?
                }
                "deepseek" => cfg.deepseek = overlay(&cfg.deepseek, t, name).map_err(err)?,
                "bedrock" => cfg.bedrock = overlay(&cfg.bedrock, t, name).map_err(err)?,
                other => {
                    return Err(format!(
                        "{origin}: unknown cache model table [{other}]\n  hint: known: anthropic, anthropic-auto, anthropic-explicit, openai, openai-5.6, paged, radix, gemini, gemini-explicit, deepseek, bedrock"
                    ))
                }
            }
        }
        for (name, c) in [
            ("anthropic", &cfg.anthropic),
            ("anthropic-auto", &cfg.anthropic_auto),
            ("anthropic-explicit", &cfg.anthropic_explicit),
            ("openai-5.6", &cfg.openai_5_6),
            ("bedrock", &cfg.bedrock),
        ] {
            c.validate()
                .map_err(|e| format!("{origin}: [{name}]: {e}"))?;
        }
        for (name, c) in [("gemini", &cfg.gemini), ("deepseek", &cfg.deepseek)] {
            c.validate()
                .map_err(|e| format!("{origin}: [{name}]: {e}"))?;
        }
        if cfg.paged.block_size == 0 || cfg.radix.page_size == 0 || cfg.openai.increment == 0 {
            return Err(format!(
                "{origin}: block_size, page_size and increment must be at least 1"
            ));
        }
        Ok(cfg)
    }

    /// Reads a cache-config file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = crate::budget::read_text(path, "cache config")
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_toml_str(&text, &path.display().to_string())
    }
}
