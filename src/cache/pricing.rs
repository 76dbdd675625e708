//! Prices and cache rules per model: data, not code.
//!
//! The bundled table (`data/pricing.toml`) is compiled into the binary; `--pricing FILE` adds or
//! replaces models by name; `--price input=…,output=…` prices models the table does not know.
//! Ids resolve the way providers name models: exact name, a listed alias, then the same with a
//! release date (`-20250929`, `-2025-09-29`, `@20250929`) or `-latest` removed. The format is
//! documented in docs/pricing.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::{CacheError, CacheOutcome};
use crate::util::ScenarioError;

const BUNDLED: &str = include_str!("../../data/pricing.toml");

/// One model's prices (USD per million tokens) and cache rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// The model id prices are looked up by (e.g. `claude-sonnet-4-6`).
    pub name: String,
    /// The provider (`anthropic`, `openai`, ...): picks the latency parameters.
    pub provider: String,
    /// Base (uncached) input price.
    pub input: f64,
    /// Output price.
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
    /// When the figures were checked (`YYYY-MM`).
    #[serde(default)]
    pub date: String,
    /// Cache lifetimes the provider offers for this model (informational, e.g. `5m, 1h`).
    #[serde(default)]
    pub ttls: String,
    /// Other ids of the same model (provider aliases such as `claude-sonnet-4-0`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Largest prompt plus output, in tokens, one request may carry (None: not known).
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Whose page the figures come from: empty or `provider` (the provider's own documentation)
    /// or `third-party` (only a third party gives them; docs/pricing.md lists those entries).
    #[serde(default)]
    pub confidence: String,
    /// What the figures leave out or assume (e.g. a minimum no page states, peak-hour prices).
    #[serde(default)]
    pub note: String,
}

fn default_write_1h() -> f64 {
    2.0
}

impl ModelPrice {
    /// A model priced on the command line (`--price input=3,output=15`); cache multipliers
    /// default to the Anthropic ones (writes 1.25x / 2x, reads 0.1x) unless given.
    pub fn from_spec(spec: &str) -> Result<ModelPrice, CacheError> {
        let hint = "write --price input=USD,output=USD[,write_5m=X,write_1h=X,read=X,min_cacheable=N,context_window=N,provider=NAME] (USD per million tokens; multipliers of the input price)";
        let mut m = ModelPrice {
            name: "--price".to_string(),
            provider: "custom".to_string(),
            input: f64::NAN,
            output: f64::NAN,
            write_5m: 1.25,
            write_1h: 2.0,
            read: 0.1,
            min_cacheable: 0,
            source: "--price on the command line".to_string(),
            date: String::new(),
            ttls: String::new(),
            aliases: Vec::new(),
            context_window: None,
            storage_per_mtok_hour: 0.0,
            confidence: String::new(),
            note: String::new(),
        };
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = |message: String, hint: Option<&'static str>| CacheError::Spec {
                spec: spec.to_string(),
                message,
                hint,
            };
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("`{part}` is not KEY=VALUE"), Some(hint)))?;
            let (key, value) = (key.trim(), value.trim());
            let num = || -> Result<f64, CacheError> {
                let v: f64 = value
                    .parse()
                    .map_err(|_| bad(format!("`{key}`: `{value}` is not a number"), Some(hint)))?;
                if !v.is_finite() || v < 0.0 {
                    return Err(bad(
                        format!("`{key}` must be a finite number of at least 0, not `{value}`"),
                        None,
                    ));
                }
                Ok(v)
            };
            let count = || -> Result<u64, CacheError> {
                value.parse().map_err(|_| {
                    bad(
                        format!("`{key}`: `{value}` is not a whole number of tokens"),
                        None,
                    )
                })
            };
            match key {
                "input" => m.input = num()?,
                "output" => m.output = num()?,
                "write_5m" | "write" => m.write_5m = num()?,
                "write_1h" => m.write_1h = num()?,
                "read" => m.read = num()?,
                "min_cacheable" => m.min_cacheable = count()?,
                "context_window" | "context" => m.context_window = Some(count()?),
                "provider" => m.provider = value.to_string(),
                other => {
                    return Err(bad(
                        format!(
                            "unknown key `{other}`{}",
                            did_you_mean(
                                other,
                                [
                                    "input",
                                    "output",
                                    "write_5m",
                                    "write_1h",
                                    "read",
                                    "min_cacheable",
                                    "context_window",
                                    "provider"
                                ]
                            )
                        ),
                        Some(hint),
                    ))
                }
            }
        }
        if m.input.is_nan() || m.output.is_nan() {
            return Err(CacheError::Spec {
                spec: spec.to_string(),
                message: "both `input` and `output` are required".to_string(),
                hint: Some(hint),
            });
        }
        Ok(m)
    }

    /// Every price and multiplier is a finite number of at least 0 (an infinite or NaN price
    /// would make every cost meaningless, and a negative one would reward cache misses).
    fn check_finite(&self) -> Result<(), CacheError> {
        for (key, v) in [
            ("input", self.input),
            ("output", self.output),
            ("write_5m", self.write_5m),
            ("write_1h", self.write_1h),
            ("read", self.read),
            ("storage_per_mtok_hour", self.storage_per_mtok_hour),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(CacheError::NotFinite { key, value: v });
            }
        }
        if self.context_window == Some(0) {
            return Err(CacheError::NoContext);
        }
        Ok(())
    }

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
    /// The table's version, as the file states it.
    #[serde(default)]
    version: String,
    /// Every model's prices and cache rules.
    models: Vec<ModelPrice>,
}

/// All known models by name.
#[derive(Debug, Clone)]
pub struct PriceTable {
    /// The table's version (a date), as `data/pricing.toml` states it.
    pub version: String,
    /// Prices by model name.
    models: BTreeMap<String, ModelPrice>,
    /// Alias -> model name.
    aliases: BTreeMap<String, String>,
    /// Prices for every model the table does not know (`--price`).
    fallback: Option<ModelPrice>,
    /// `--strict-pricing`: a model the table does not list is an error, never priced by its
    /// family's nearest known model.
    strict: bool,
    /// Models priced by a family guess: id -> the entry used. Shared by clones, so each guess
    /// is announced once per run however many copies of the table price it.
    assumed: Arc<Mutex<BTreeMap<String, String>>>,
    /// Called once per guessed id with the warning text (the CLI prints it on standard error).
    on_assumption: Option<fn(&str)>,
}

pub use crate::util::{closest, did_you_mean};

/// `id` without a trailing release date (`-20250929`, `-2025-09-29`, `@20250929`) or `-latest`.
fn undated(id: &str) -> &str {
    if let Some((base, _)) = id.split_once('@') {
        return base;
    }
    if let Some(base) = id.strip_suffix("-latest") {
        return base;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((base, tail)) = id.rsplit_once('-') {
        if tail.len() == 8 && digits(tail) {
            return base;
        }
    }
    // -YYYY-MM-DD
    let parts: Vec<&str> = id.rsplitn(4, '-').collect();
    if parts.len() == 4
        && parts[0].len() == 2
        && parts[1].len() == 2
        && parts[2].len() == 4
        && parts[..3].iter().all(|p| digits(p))
    {
        return parts[3];
    }
    id
}

impl PriceTable {
    /// The table compiled into the binary.
    pub fn bundled() -> Self {
        let mut table = PriceTable {
            version: String::new(),
            models: BTreeMap::new(),
            aliases: BTreeMap::new(),
            fallback: None,
            strict: false,
            assumed: Arc::default(),
            on_assumption: None,
        };
        table
            .merge_str(BUNDLED, Path::new("data/pricing.toml"))
            .expect("bundled pricing table is valid");
        table
    }

    /// Adds or replaces models from a user file.
    pub fn merge_file(&mut self, path: &Path) -> Result<(), CacheError> {
        // Size-capped like every input file, so `--pricing /dev/zero` is an error, not a hang.
        let text = crate::budget::read_text(path, "pricing file")
            .map_err(|e| ScenarioError::new(path, None, e))?;
        self.merge_str(&text, path)
    }

    /// Adds or replaces models from the text of a pricing file; nothing changes on an error.
    pub fn merge_str(&mut self, text: &str, path: &Path) -> Result<(), CacheError> {
        let file: TableFile = toml::from_str(text).map_err(|e| {
            ScenarioError::new(path, None, format!("invalid pricing file: {e}")).with_hint(
                "each [[models]] entry needs name, provider, input, output, write_5m, read (see docs/pricing.md)",
            )
        })?;
        for (i, m) in file.models.iter().enumerate() {
            m.check_finite().map_err(|e| {
                ScenarioError::new(path, Some(format!("models[{i}] (`{}`)", m.name)), e).with_hint(
                    "prices are USD per million tokens, multipliers a factor of `input` (see docs/pricing.md)",
                )
            })?;
        }
        for m in file.models {
            for a in &m.aliases {
                self.aliases.insert(a.clone(), m.name.clone());
            }
            self.aliases.remove(&m.name);
            self.models.insert(m.name.clone(), m);
        }
        if !file.version.is_empty() {
            self.version = file.version;
        }
        Ok(())
    }

    /// Prices every model the table does not know (`--price`).
    pub fn set_fallback(&mut self, price: ModelPrice) {
        self.fallback = Some(price);
    }

    /// The entry of a model id: its name, an alias, either without a date or `-latest`, else
    /// the `--price` fallback, else (unless strict) its family's nearest known model, recorded
    /// and announced as an assumption (see [`crate::cache::model_family`]).
    pub fn get(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(m) = self.resolve(model).or(self.fallback.as_ref()) {
            return Some(m);
        }
        if self.strict {
            return None;
        }
        let kin = self.family_entry(model)?;
        self.record_assumption(model, &kin.name);
        Some(kin)
    }

    /// The entry of `model`'s family's nearest known model (names only, not aliases).
    pub fn family_entry(&self, model: &str) -> Option<&ModelPrice> {
        let near = super::model_family::nearest(undated(model), self.names())?;
        self.models.get(near)
    }

    fn record_assumption(&self, model: &str, used: &str) {
        let Ok(mut seen) = self.assumed.lock() else {
            return;
        };
        if seen.insert(model.to_string(), used.to_string()).is_none() {
            if let Some(warn) = self.on_assumption {
                warn(&assumption_text(model, used));
            }
        }
    }

    /// `--strict-pricing`: refuse family guesses.
    pub fn set_strict(&mut self, strict: bool) {
        self.strict = strict;
    }

    /// Whether family guesses are refused (`--strict-pricing`).
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// Where to announce each family guess once (the CLI passes its `warning:` printer).
    pub fn on_assumption(&mut self, warn: fn(&str)) {
        self.on_assumption = Some(warn);
    }

    /// Every family guess made so far, as warning texts, in id order.
    pub fn assumptions(&self) -> Vec<String> {
        self.assumed
            .lock()
            .map(|seen| seen.iter().map(|(m, u)| assumption_text(m, u)).collect())
            .unwrap_or_default()
    }

    /// The table's own entry for `model` (no fallback).
    pub fn resolve(&self, model: &str) -> Option<&ModelPrice> {
        let by_name = |id: &str| {
            self.models
                .get(id)
                .or_else(|| self.aliases.get(id).and_then(|name| self.models.get(name)))
        };
        by_name(model).or_else(|| by_name(undated(model)))
    }

    /// Adds an entry under each id that resolves only through an alias, a date or the
    /// fallback, so code that looks models up by exact name (cache minimums) finds them too.
    pub fn pin<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) {
        for id in ids {
            if self.models.contains_key(id) {
                continue;
            }
            if let Some(m) = self.get(id).cloned() {
                self.models.insert(id.to_string(), m);
            }
        }
    }

    /// Names and aliases, for suggestions.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.models
            .keys()
            .chain(self.aliases.keys())
            .map(String::as_str)
    }

    /// The error for a model the table does not know, with the closest known id; under
    /// `--strict-pricing`, also the family guess it refused.
    pub fn unknown_model(&self, model: &str) -> String {
        let refused = match (self.strict, self.family_entry(model)) {
            (true, Some(kin)) => format!(
                " (--strict-pricing: not priced as its family's nearest known model `{}`)",
                kin.name
            ),
            _ => String::new(),
        };
        format!(
            "model `{model}` is not in the pricing table{refused}{}",
            did_you_mean(model, self.ids())
        )
    }

    /// The model names the table knows (aliases not included), in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }
}

/// The warning for a model priced by its family's nearest known model.
fn assumption_text(model: &str, used: &str) -> String {
    format!(
        "model `{model}` is not in the pricing table: priced as `{used}`, the nearest known model of its family (docs/pricing.md); add it with --pricing FILE to price it exactly, or pass --strict-pricing to refuse"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_latest_come_off_model_ids() {
        assert_eq!(undated("claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
        assert_eq!(undated("claude-sonnet-4-5@20250929"), "claude-sonnet-4-5");
        assert_eq!(undated("gpt-4o-2024-08-06"), "gpt-4o");
        assert_eq!(undated("claude-3-7-sonnet-latest"), "claude-3-7-sonnet");
        // Not dates: a version number, a short digit run.
        assert_eq!(undated("gpt-4.1"), "gpt-4.1");
        assert_eq!(undated("claude-opus-4-1"), "claude-opus-4-1");
    }

    #[test]
    fn ids_resolve_by_name_alias_and_date_but_not_by_prefix() {
        let t = PriceTable::bundled();
        let name = |id: &str| t.get(id).map(|m| m.name.clone());
        assert_eq!(
            name("claude-sonnet-4-0").as_deref(),
            Some("claude-sonnet-4")
        );
        assert_eq!(
            name("claude-opus-4-1-20250805").as_deref(),
            Some("claude-opus-4-1")
        );
        assert_eq!(name("gpt-5-mini").as_deref(), Some("gpt-5-mini"));
        // gpt-5-nano-ish ids are not priced as gpt-5 by prefix.
        assert_eq!(name("gpt-5-turbo"), None);
        assert!(t
            .unknown_model("claude-sonet-4-5")
            .ends_with("did you mean `claude-sonnet-4-5`?"));
    }

    #[test]
    fn the_worked_example_of_docs_pricing_md() {
        let mut t = PriceTable::bundled();
        t.merge_str(
            "[[models]]\nname = \"my-model\"\nprovider = \"anthropic\"\ninput = 2.0\noutput = 10.0\nwrite_5m = 1.25\nwrite_1h = 2.0\nread = 0.1\nmin_cacheable = 1024\ncontext_window = 200000\naliases = [\"my-model-latest-preview\"]\n",
            Path::new("prices.toml"),
        )
        .unwrap();
        let m = t.get("my-model-latest-preview").unwrap();
        // 8,000 read x 0.1 x $2 + 2,000 written x 1.25 x $2 + 500 out x $10, per million:
        // 0.0016 + 0.0050 + 0.0050 = $0.0116.
        let outcome = CacheOutcome {
            prompt_tokens: 10_000,
            cached_tokens: 8_000,
            write_5m_tokens: 2_000,
            ..CacheOutcome::default()
        };
        assert!((m.cost(&outcome, 500) - 0.0116).abs() < 1e-12);
        assert_eq!(m.context_window, Some(200_000));
    }

    #[test]
    fn prices_must_be_finite_and_not_negative() {
        let base = "[[models]]\nname = \"x\"\nprovider = \"p\"\ninput = 1.0\noutput = 2.0\nwrite_5m = 1.25\nread = 0.1\n";
        for (from, to, key) in [
            ("output = 2.0", "output = nan", "`output`"),
            ("input = 1.0", "input = inf", "`input`"),
            ("read = 0.1", "read = -0.1", "`read`"),
        ] {
            let mut t = PriceTable::bundled();
            let e = t
                .merge_str(&base.replace(from, to), Path::new("p.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("p.toml: models[0] (`x`): ") && e.contains(key),
                "{e}"
            );
            // Nothing was merged.
            assert!(t.get("x").is_none());
        }
    }

    #[test]
    fn price_specs() {
        let m = ModelPrice::from_spec("input=3, output=15, read=0.2, context_window=1000").unwrap();
        assert_eq!(
            (m.input, m.output, m.read, m.write_5m),
            (3.0, 15.0, 0.2, 1.25)
        );
        assert_eq!(m.context_window, Some(1000));
        assert!(ModelPrice::from_spec("input=3").is_err());
        assert!(ModelPrice::from_spec("input=3,output=-1").is_err());
        assert!(ModelPrice::from_spec("input=3,output=x").is_err());
        let mut t = PriceTable::bundled();
        assert!(t.get("acme").is_none());
        t.set_fallback(m);
        assert_eq!(t.get("acme").unwrap().input, 3.0);
        // The table's own entries still win over the fallback.
        assert_eq!(t.get("gpt-4o").unwrap().input, 2.5);
    }
}
