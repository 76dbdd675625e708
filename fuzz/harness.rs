//! What each fuzz target does with one input, shared by the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`) and the stable property test that replays the seed corpus mutated
//! (`tests/robustness.rs`). Every function must return normally on any input: a panic, a hang or
//! a runaway allocation is the bug being looked for.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use plancache::budget::Budget;
use plancache::cache::{CacheConfig, PriceTable};
use plancache::compare::{compare, markdown, Dataset, Thresholds};
use plancache::engine::ReplayEnv;
use plancache::import::{build_scenarios, claude_code, codex, ImportOptions};
use plancache::prompt::{Encoding, Tokenizer};
use plancache::scenario::{load_str, Session};
use plancache::sweep::{merge, Shard, Sweep};

/// Loads both tokenizers (seconds in an instrumented build), so that time is not charged to
/// the first input that has text; called by the fuzz targets' `init`.
pub fn init() {
    setup();
    for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
        Tokenizer::new(enc).count(&plancache::prompt::TokenSource::Text("warm up".into()));
    }
}

/// A smaller budget than the default keeps each input quick (the budget itself has its own
/// tests); set once per process. `PLANCACHE_FUZZ_MAX_TOKENS` lowers (or raises) the session
/// token budget from 200,000: the replay under every cache model costs in proportion to it.
fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let tokens = std::env::var("PLANCACHE_FUZZ_MAX_TOKENS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000);
        Budget::set_current(Budget {
            max_session_tokens: tokens,
            max_steps: 2_000,
            max_streams: 64,
        })
    });
}

fn env() -> &'static ReplayEnv {
    static ENV: OnceLock<ReplayEnv> = OnceLock::new();
    ENV.get_or_init(ReplayEnv::default)
}

/// A per-process scratch directory for loaders that read files.
fn scratch() -> &'static PathBuf {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("plancache-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch directory");
        d
    })
}

fn all_caches() -> Vec<String> {
    plancache::cache::CACHE_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// A scenario file: parse, validate, build the session, replay it under every strategy and
/// every cache model.
pub fn scenario(data: &[u8]) {
    setup();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz-scenario.toml");
    let Ok(scenario) = load_str(text, path) else {
        return;
    };
    // A fresh tokenizer per input: its memo would otherwise grow for the whole run.
    let tokenizer = Arc::new(Tokenizer::new(scenario.tokenizer));
    let Ok(session) = Session::new(scenario, path, text, tokenizer) else {
        return;
    };
    let strategies = plancache::strategy::parse_list("all").expect("known strategies");
    let _ = plancache::engine::run(&[session], &strategies, &all_caches(), env());
}

fn import(transcript: &plancache::import::Transcript) {
    for s in build_scenarios(transcript, &ImportOptions::default()) {
        if let Ok(toml) = s.to_toml("fuzz.jsonl") {
            let _ = load_str(&toml, Path::new("imported.toml"));
        }
    }
}

/// A Claude Code transcript: parse, turn into scenarios, write them as TOML and read them back.
pub fn import_claude_code(data: &[u8]) {
    setup();
    if let Ok(text) = std::str::from_utf8(data) {
        import(&claude_code::parse(text));
    }
}

/// A Codex rollout: as [`import_claude_code`].
pub fn import_codex(data: &[u8]) {
    setup();
    if let Ok(text) = std::str::from_utf8(data) {
        import(&codex::parse(text));
    }
}

const SMALL_SCENARIO: &str = r#"
name = "fuzz"
model = "claude-sonnet-4-5"
system = { tokens = 1500 }
tools = [{ name = "Read", tokens = 600 }]
[[steps]]
user = { tokens = 40 }
[[steps]]
assistant = { tokens = 30, calls = [{ tool = "Read", result_tokens = 900 }] }
[[steps]]
wait = "6m"
[[steps]]
assistant = { tokens = 20 }
"#;

/// A cache-config file and a pricing file (the input split at the first line `---`): parse both,
/// replay a small scenario under every cache model with them, and draw the report's charts.
pub fn config_pricing(data: &[u8]) {
    setup();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (config, pricing) = text.split_once("\n---\n").unwrap_or((text, ""));
    let Ok(caches) = CacheConfig::from_toml_str(config, "fuzz-config.toml") else {
        return;
    };
    let mut prices = PriceTable::bundled();
    if !pricing.is_empty() {
        let path = scratch().join("pricing.toml");
        if std::fs::write(&path, pricing).is_err() || prices.merge_file(&path).is_err() {
            return;
        }
    }
    let env = ReplayEnv {
        prices,
        caches,
        ..ReplayEnv::default()
    };
    let path = Path::new("fuzz.toml");
    let scenario = load_str(SMALL_SCENARIO, path).expect("the fixed scenario loads");
    let session = Session::new(
        scenario,
        path,
        SMALL_SCENARIO,
        Arc::new(Tokenizer::new(Encoding::O200kBase)),
    )
    .expect("the fixed scenario builds");
    let strategies = plancache::strategy::parse_list("all").expect("known strategies");
    if let Ok(run) = plancache::engine::run(&[session], &strategies, &all_caches(), &env) {
        // Charts read every figure: a value the axis code cannot handle must not get this far.
        // SVG only: PNG encoding adds time, not coverage of plancache's code.
        for group in plancache::chart::data::groups(&run) {
            let _ = plancache::chart::render_group(&group, &env.prices, None);
        }
    }
}

/// A baseline for `plancache compare`: `summary.csv` (or `run.json` when the input starts with
/// `{`), compared against itself.
pub fn baseline(data: &[u8]) {
    setup();
    let json = data.first() == Some(&b'{');
    let path = scratch().join(if json { "run.json" } else { "summary.csv" });
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Ok(baseline) = Dataset::load(&path) else {
        return;
    };
    let t = Thresholds::default();
    let outcome = compare(&baseline, &baseline, &t, &[]);
    let _ = markdown(&outcome, &baseline, &baseline, &t);
}

/// A sweep file: parse it, walk some points lazily, and merge a shard CSV made from the input's
/// tail (after a line `---`).
pub fn sweep(data: &[u8]) {
    setup();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (file, csv) = text.split_once("\n---\n").unwrap_or((text, ""));
    let parsed = Sweep::parse_capped(file, Path::new("fuzz-sweep.toml"), 1_000_000);
    let expected = match &parsed {
        Ok(s) => {
            let _ = s.header();
            for i in Shard::parse("2/7")
                .expect("shard")
                .indices(s.len())
                .take(64)
            {
                let _ = s.point(i);
            }
            Some(s.len())
        }
        Err(_) => None,
    };
    if !csv.is_empty() {
        let inputs = vec![(PathBuf::from("shard-1-of-1.csv"), csv.to_string())];
        let _ = merge(&inputs, expected);
        let _ = merge(&inputs, None);
    }
}

/// Writes `data` to the scratch directory as `name` and returns the path.
fn scratch_file(name: &str, data: &[u8]) -> Option<PathBuf> {
    let path = scratch().join(name);
    std::fs::write(&path, data).ok().map(|_| path)
}

/// A raw API request log of any kind the reader detects from its content (claude-trace JSONL,
/// HAR, OpenTelemetry JSON, VCR cassette): read, rebuild every request from its body, explain
/// each read, write each stream as a scenario and load it back.
pub fn requests(data: &[u8]) {
    setup();
    let Some(path) = scratch_file("requests.log", data) else {
        return;
    };
    let Ok(exchanges) = plancache::requests::read_log(&path, None) else {
        return;
    };
    let Ok(log) = plancache::requests::build_log(&path, &exchanges) else {
        return;
    };
    let _ = plancache::requests::explain_log(&log, &PriceTable::bundled());
    for s in plancache::requests::scenario::scenarios(&log, "fuzz") {
        if let Ok(text) = s.to_toml("fuzz") {
            let _ = load_str(&text, Path::new("fuzz.toml"));
        }
    }
}

/// A block-hash trace (kv-cache-tester JSON or Mooncake JSONL, detected): read, cut into
/// stream scenarios, write each as TOML and load it back.
pub fn trace(data: &[u8]) {
    setup();
    let Some(path) = scratch_file("trace.json", data) else {
        return;
    };
    let Ok(trace) = plancache::trace::read(&path) else {
        return;
    };
    for s in plancache::trace::scenario::scenarios(&trace) {
        if let Ok(text) = s.to_toml(&trace) {
            let _ = load_str(&text, Path::new("fuzz.toml"));
        }
    }
}

/// `--set PATH=VALUE` parameters, one per line, then a line `---` and a scenario (the small
/// fixed one when absent): parse, apply in order, load and build the session.
pub fn params(data: &[u8]) {
    setup();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (specs, scenario) = text.split_once("\n---\n").unwrap_or((text, SMALL_SCENARIO));
    let Ok(sets) = specs
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(plancache::scenario::params::SetParam::parse)
        .collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    let overrides = plancache::scenario::params::Overrides {
        sets,
        ..Default::default()
    };
    let path = Path::new("fuzz.toml");
    let Ok(applied) = overrides.apply(scenario, path) else {
        return;
    };
    let Ok(loaded) = load_str(&applied, path) else {
        return;
    };
    let _ = Session::new(
        loaded,
        path,
        &applied,
        Arc::new(Tokenizer::new(Encoding::O200kBase)),
    );
}
