//! The one table of cache models, in the spirit of vLLM's `spec_manager_map`
//! (vllm-project/vllm `vllm/v1/core/single_type_kv_cache_manager.py`): each line gives a model's
//! name (as `--cache` and the cache-config file's `[name]` table spell it), its parameter type
//! and defaults, its constructor and the line that describes it in docs/cache-models.md.
//!
//! Everything that lists, parses or builds cache models reads this table: `--cache` parsing and
//! `--cache all` ([`CACHE_NAMES`], in table order), [`super::build_with`], the cache-config file
//! ([`CacheConfig::from_toml_str`]), the docs listing (a test checks that docs/cache-models.md
//! describes every model with its `doc` line) and the benches. Adding a cache model is its file
//! (the model, its parameter type implementing [`Section`]) plus one line below.

use std::fmt;

use serde::{de::DeserializeOwned, Serialize};

use super::anthropic::{BreakpointCache, BreakpointConfig};
use super::gemini::{self, ExplicitCache, ExplicitConfig};
use super::ideal::IdealCache;
use super::openai::{OpenAiCache, OpenAiConfig};
use super::paged::{PagedCache, PagedConfig};
use super::radix::{RadixCache, RadixConfig};
use super::unit_prefix::UnitPrefixConfig;
use super::{deepseek, CacheError, CacheModel, PriceTable};

/// What a model's parameter type offers the registry: a `[name]` table of a cache-config file
/// (serde, keys left out keep the defaults) and a check of values no cache could work with.
pub trait Section: Clone + PartialEq + fmt::Debug + Serialize + DeserializeOwned {
    /// Whether the model takes parameters, i.e. a `[name]` table is accepted (`ideal` takes none).
    const TABLE: bool = true;

    /// Checks values no cache could work with.
    fn check(&self) -> Result<(), CacheError> {
        Ok(())
    }
}

/// `ideal` takes no parameters.
impl Section for () {
    const TABLE: bool = false;
}

/// Builds a fresh cache model under a name from its section of the parameters.
type Constructor =
    fn(&'static str, &CacheConfig, &PriceTable) -> Result<Box<dyn CacheModel>, CacheError>;

/// One registered cache model.
pub struct CacheEntry {
    /// Name as `--cache` and the cache-config file's table give it.
    pub name: &'static str,
    /// One line saying what it models (the docs table's "What it models" column).
    pub doc: &'static str,
    /// Whether a cache-config file may have a `[name]` table for it.
    pub table: bool,
    /// Builds a fresh model from its section of the parameters (checked first).
    build: Constructor,
    /// Lays the keys of a `[name]` table over the model's section.
    overlay: fn(&mut CacheConfig, &toml::Table) -> Result<(), CacheError>,
    /// Checks the model's section.
    check: fn(&CacheConfig) -> Result<(), CacheError>,
}

impl fmt::Debug for CacheEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheEntry")
            .field("name", &self.name)
            .field("doc", &self.doc)
            .finish_non_exhaustive()
    }
}

impl CacheEntry {
    /// A fresh model with the parameters of `config`.
    pub fn build(
        &self,
        config: &CacheConfig,
        prices: &PriceTable,
    ) -> Result<Box<dyn CacheModel>, CacheError> {
        (self.build)(self.name, config, prices)
    }

    /// Lays a `[name]` table over the model's section of `config`.
    pub fn overlay(&self, config: &mut CacheConfig, table: &toml::Table) -> Result<(), CacheError> {
        (self.overlay)(config, table)
    }

    /// Checks the model's section of `config`.
    pub fn check(&self, config: &CacheConfig) -> Result<(), CacheError> {
        (self.check)(config)
    }
}

/// The registered model called `name`.
pub fn entry(name: &str) -> Option<&'static CacheEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Overlays the keys of `table` on `base` (a profile's defaults).
fn overlay<T: Serialize + DeserializeOwned>(
    base: &T,
    table: &toml::Table,
    section: &str,
) -> Result<T, CacheError> {
    let fail = |reason: String| CacheError::Section {
        section: section.to_string(),
        reason,
    };
    let mut merged =
        toml::Table::try_from(base).map_err(|e| fail(format!("cannot represent defaults: {e}")))?;
    for (k, v) in table {
        merged.insert(k.clone(), v.clone());
    }
    merged
        .try_into()
        .map_err(|e: toml::de::Error| fail(e.to_string()))
}

/// Declares [`CacheConfig`] (one field per model), [`REGISTRY`] and [`CACHE_NAMES`] from one
/// line per model: `"name", field: Type = defaults, constructor, "doc line";`.
macro_rules! cache_registry {
    ($($name:literal, $field:ident: $ty:ty = $default:expr, $build:expr, $doc:literal;)*) => {
        /// Parameters of every cache model: one field per registered model, named after it.
        #[derive(Debug, Clone, PartialEq)]
        pub struct CacheConfig {
            $(
                #[doc = concat!("Parameters of `", $name, "` (", $doc, ").")]
                pub $field: $ty,
            )*
        }

        impl Default for CacheConfig {
            fn default() -> Self {
                CacheConfig { $($field: $default,)* }
            }
        }

        /// Every cache model, in `--cache all` order.
        pub static REGISTRY: &[CacheEntry] = &[$(
            CacheEntry {
                name: $name,
                doc: $doc,
                table: <$ty as Section>::TABLE,
                build: |name, config, prices| {
                    let c = &config.$field;
                    c.check().map_err(|e| CacheError::Model { name, source: Box::new(e) })?;
                    let make: fn(&'static str, &$ty, &PriceTable) -> Box<dyn CacheModel> = $build;
                    Ok(make(name, c, prices))
                },
                overlay: |config, table| {
                    config.$field = overlay(&config.$field, table, $name)?;
                    Ok(())
                },
                check: |config| config.$field.check(),
            },
        )*];

        /// The cache model names `--cache` accepts, in display order (the registry's).
        pub const CACHE_NAMES: &[&str] = &[$($name),*];
    };
}

cache_registry! {
    "anthropic", anthropic: BreakpointConfig = BreakpointConfig::default(),
        |n, c, p| Box::new(BreakpointCache::new(n, c.clone(), p)),
        "Claude Code on the Anthropic API";
    "anthropic-auto", anthropic_auto: BreakpointConfig = BreakpointConfig::automatic(),
        |n, c, p| Box::new(BreakpointCache::new(n, c.clone(), p)),
        "API automatic mode";
    "anthropic-explicit", anthropic_explicit: BreakpointConfig = BreakpointConfig::explicit(),
        |n, c, p| Box::new(BreakpointCache::new(n, c.clone(), p)),
        "only the scenario's `cache_control` marks";
    "openai", openai: OpenAiConfig = OpenAiConfig::default(),
        |_, c, _| Box::new(OpenAiCache::new(c.clone())),
        "OpenAI automatic caching before GPT-5.6";
    "openai-5.6", openai_5_6: BreakpointConfig = BreakpointConfig::openai_5_6(),
        |n, c, p| Box::new(BreakpointCache::new(n, c.clone(), p)),
        "OpenAI GPT-5.6+";
    "paged", paged: PagedConfig = PagedConfig::default(),
        |_, c, _| Box::new(PagedCache::new(c.clone())),
        "vLLM automatic prefix caching";
    "radix", radix: RadixConfig = RadixConfig::default(),
        |_, c, _| Box::new(RadixCache::new(c.clone())),
        "SGLang RadixAttention";
    "ideal", ideal: () = (),
        |_, _, _| Box::new(IdealCache::default()),
        "upper bound";
    "gemini", gemini: UnitPrefixConfig = gemini::implicit_config(),
        |_, c, p| Box::new(gemini::implicit(c.clone(), p)),
        "Gemini implicit caching";
    "gemini-explicit", gemini_explicit: ExplicitConfig = ExplicitConfig::default(),
        |_, c, p| Box::new(ExplicitCache::new(c.clone(), p)),
        "Gemini `cachedContents` objects";
    "deepseek", deepseek: UnitPrefixConfig = deepseek::default_config(),
        |_, c, p| Box::new(deepseek::build(c.clone(), p)),
        "DeepSeek disk cache";
    "bedrock", bedrock: BreakpointConfig = BreakpointConfig::bedrock(),
        |n, c, p| Box::new(BreakpointCache::new(n, c.clone(), p)),
        "Claude on Amazon Bedrock";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/cache-models.md describes every registered model, in a table row that opens with
    /// its name and its registry doc line, and no model the registry lacks.
    #[test]
    fn the_docs_list_every_registered_model_with_its_doc_line() {
        let docs = include_str!("../../docs/cache-models.md");
        for e in REGISTRY {
            let row = format!("| `{}` | {} |", e.name, e.doc);
            assert!(docs.contains(&row), "docs/cache-models.md lacks `{row}`");
        }
        // The model tables have six columns (the break-reason table two).
        let rows: Vec<&str> = docs
            .lines()
            .filter(|l| l.starts_with("| `") && l.matches('|').count() == 7)
            .filter_map(|l| l[3..].split('`').next())
            .collect();
        assert!(rows.iter().all(|r| entry(r).is_some()), "{rows:?}");
        assert_eq!(rows.len(), REGISTRY.len(), "{rows:?}");
    }

    /// Names are unique, every one builds under its defaults and reports its registry name, and
    /// exactly `ideal` takes no `[name]` table.
    #[test]
    fn every_entry_builds_under_its_name() {
        let prices = PriceTable::bundled();
        let config = CacheConfig::default();
        for (i, e) in REGISTRY.iter().enumerate() {
            assert!(REGISTRY[..i].iter().all(|o| o.name != e.name), "{}", e.name);
            assert_eq!(e.build(&config, &prices).unwrap().name(), e.name);
            assert_eq!(e.table, e.name != "ideal", "{}", e.name);
            assert!(e.check(&config).is_ok(), "{}", e.name);
        }
        assert_eq!(CACHE_NAMES.len(), REGISTRY.len());
    }
}
