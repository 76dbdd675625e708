//! Pieces shared by several subcommands: finding and loading scenarios, prices.

use std::path::{Path, PathBuf};

pub use plancache::export::target::{Output, OutputKind};

use super::CliError;
use plancache::cache::pricing::did_you_mean;
use plancache::cache::{CacheConfig, ModelPrice, PriceTable};
use plancache::scenario::files::{scenario_text, Loader};
use plancache::scenario::params::Overrides;
use plancache::scenario::Session;

/// The scenario files named on the command line (directories expand to their `*.toml`), or every
/// file in `./scenarios` when none is named.
pub fn scenario_paths(args: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    Ok(plancache::scenario::scenario_paths(args)?)
}

/// Loads every scenario; text content is tokenized with one shared, lazily loaded tokenizer per
/// encoding.
pub fn load_sessions(paths: &[PathBuf]) -> Result<Vec<Session>, CliError> {
    load_sessions_with(paths, &Overrides::default())
}

/// As [`load_sessions`], with `--model` / `--keepalive` / `--set` applied to each file's TOML
/// before it is loaded (so every load-time check runs on the result).
pub fn load_sessions_with(
    paths: &[PathBuf],
    overrides: &Overrides,
) -> Result<Vec<Session>, CliError> {
    let mut loader = Loader::default();
    for path in paths {
        // A raw API request log stands for the scenario of each of its streams.
        let texts = match super::logs::log_input(path) {
            Some(kind) => super::logs::log_texts(path, kind)?,
            None => vec![scenario_text(path)?],
        };
        for text in texts {
            loader.add(path, &text, overrides)?;
        }
    }
    let (sessions, notes) = loader.finish()?;
    for note in notes {
        eprintln!("note: {note}");
    }
    Ok(sessions)
}

/// `--strict-pricing` (a global flag): set once by dispatch, read by every price table.
static STRICT_PRICING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records `--strict-pricing` for every price table this process builds.
pub fn set_strict_pricing(strict: bool) {
    STRICT_PRICING.store(strict, std::sync::atomic::Ordering::Relaxed);
}

/// The price-table flags every replaying command takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PricingArgs {
    /// A pricing file that adds or replaces models of the bundled table (docs/pricing.md).
    #[arg(long = "pricing", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Prices for models the table does not know: input=USD,output=USD per million tokens
    /// [,write_5m=X,write_1h=X,read=X,context_window=N] (docs/pricing.md).
    #[arg(long, value_name = "SPEC", value_parser = ModelPrice::from_spec)]
    pub price: Option<ModelPrice>,
}

impl PricingArgs {
    /// The price table these flags give (see [`prices`]).
    pub fn table(&self) -> Result<PriceTable, CliError> {
        prices(self.file.as_deref(), self.price.as_ref())
    }
}

/// The bundled price table, plus a user file, plus `--price` for models the table lacks; a
/// model none of them lists is priced by its family's nearest known model with a warning, or
/// refused under `--strict-pricing`.
pub fn prices(file: Option<&Path>, price: Option<&ModelPrice>) -> Result<PriceTable, CliError> {
    let mut table = PriceTable::bundled();
    table.set_strict(STRICT_PRICING.load(std::sync::atomic::Ordering::Relaxed));
    table.on_assumption(super::output::warn);
    if let Some(f) = file {
        table.merge_file(f).map_err(CliError::input)?;
    }
    if let Some(p) = price {
        table.set_fallback(p.clone());
    }
    Ok(table)
}

/// Every model id a scenario names (session model, plan model, turn and subagent models).
pub fn scenario_models(session: &Session) -> Vec<String> {
    let sc = &session.scenario;
    let mut out = vec![sc.model.clone()];
    out.extend(sc.plan_model.clone());
    fn walk(steps: &[plancache::scenario::Step], out: &mut Vec<String>) {
        for step in steps {
            match step {
                plancache::scenario::Step::Assistant(turn) => out.extend(turn.model.clone()),
                plancache::scenario::Step::Agents(agents) => {
                    for a in agents {
                        out.extend(a.model.clone());
                        walk(&a.steps, out);
                    }
                }
                _ => {}
            }
        }
    }
    walk(&sc.steps, &mut out);
    out.sort();
    out.dedup();
    out
}

/// Checks that the price table knows every model the sessions use (with a "did you mean"
/// and the `--price` escape hatch), and pins aliases and dated ids so every cache model finds
/// their minimums.
pub fn check_models(sessions: &[Session], prices: &mut PriceTable) -> Result<(), CliError> {
    // Tables built without `prices` (check, generate) follow --strict-pricing too.
    prices.set_strict(STRICT_PRICING.load(std::sync::atomic::Ordering::Relaxed));
    prices.on_assumption(super::output::warn);
    for session in sessions {
        let models = scenario_models(session);
        for m in &models {
            if prices.get(m).is_none() {
                // The line the id is written on, with the line itself and a caret under it.
                let (place, snippet) = match plancache::scenario::model_place(&session.path, m) {
                    Some((line, col, snip)) => {
                        (format!(": line {line}, column {col}"), format!("\n{snip}"))
                    }
                    None => (String::new(), String::new()),
                };
                return Err(CliError::input(format!(
                    "{}{place}: {}{snippet}\n  hint: fix the id, add the model with --pricing FILE (docs/pricing.md), or price it with --price input=USD,output=USD",
                    session.path.display(),
                    prices.unknown_model(m)
                )));
            }
        }
        prices.pin(models.iter().map(String::as_str));
    }
    Ok(())
}

/// Parses a strategy list, adding the closest known name to an unknown one.
pub fn strategies(spec: &str) -> Result<Vec<Box<dyn plancache::strategy::Strategy>>, CliError> {
    plancache::strategy::parse_list(spec).map_err(|e| {
        let names = plancache::strategy::names();
        let unknown = spec
            .split(',')
            .map(str::trim)
            .find(|n| !n.is_empty() && *n != "all" && !names.contains(n));
        match unknown {
            Some(n) => CliError::input(format!("{e}{}", did_you_mean(n, names.iter().copied()))),
            None => CliError::input(e),
        }
    })
}

/// One warning per scenario, model and cache-free request sequence whose requests exceed the
/// model's context window (the provider would refuse them).
pub fn context_overruns(report: &plancache::engine::RunReport, prices: &PriceTable) -> Vec<String> {
    use std::collections::BTreeMap;
    // (scenario, model) -> (window, first request, its tokens, count, strategies)
    let mut seen: BTreeMap<(String, String), (u64, usize, u64, usize)> = BTreeMap::new();
    for r in report.rows() {
        let Some(window) = prices.get(&r.model).and_then(|p| p.context_window) else {
            continue;
        };
        let tokens = r.prompt_tokens.saturating_add(r.output_tokens);
        if tokens <= window {
            continue;
        }
        let e = seen
            .entry((r.scenario.to_string(), r.model.to_string()))
            .or_insert((window, r.request, tokens, 0));
        e.3 += 1;
        if tokens > e.2 {
            e.1 = r.request;
            e.2 = tokens;
        }
    }
    seen.into_iter()
        .map(|((scenario, model), (window, request, tokens, count))| {
            format!(
                "{scenario}: {count} request(s) exceed the {} context window of {model} (largest: request {request}, {} prompt + output tokens); the provider would refuse them",
                group_digits(window),
                group_digits(tokens)
            )
        })
        .collect()
}

/// `1280000` as `1,280,000`.
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Where a file output goes: standard output for `-`, else a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    Stdout,
    File(PathBuf),
}

impl Sink {
    /// Checks a file destination before any work: `-` is standard output; a directory, a
    /// socket or anything else that is neither a regular file nor a stream, or a parent that
    /// is a file, is refused (see [`plancache::export::target`]).
    pub fn parse(flag: &str, path: &Path) -> Result<Sink, CliError> {
        if path.as_os_str() == "-" {
            return Ok(Sink::Stdout);
        }
        plancache::export::target::file_target(flag, path)
            .map_err(|e| CliError::input(e.to_string()))?;
        check_parent(flag, path)?;
        Ok(Sink::File(path.to_path_buf()))
    }

    /// Writes the bytes (atomically for a file).
    pub fn write(&self, bytes: &[u8]) -> Result<(), CliError> {
        match self {
            Sink::Stdout => super::output::stdout_bytes(bytes),
            Sink::File(p) => plancache::export::write_atomic(p, bytes).map_err(CliError::input),
        }
    }
}

fn check_parent(flag: &str, path: &Path) -> Result<(), CliError> {
    let mut parent = path.parent();
    while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
        if p.exists() {
            if !p.is_dir() {
                return Err(CliError::input(format!(
                    "{flag} {}: {} is a file, not a directory",
                    path.display(),
                    p.display()
                )));
            }
            break;
        }
        parent = p.parent();
    }
    Ok(())
}

/// Checks an output directory before any work: `-` and existing files are refused with the
/// flag that does what was probably meant.
pub fn check_out_dir(path: &Path, stdout_hint: &str) -> Result<(), CliError> {
    check_outputs(
        &[Output {
            flag: "--out",
            path,
            kind: OutputKind::Dir,
        }],
        &[],
        stdout_hint,
    )
}

/// One file output `flag` names: not an input, not a device it would replace (checked before
/// any work).
pub fn check_file_out(flag: &str, path: &Path, inputs: &[PathBuf]) -> Result<(), CliError> {
    check_outputs(
        &[Output {
            flag,
            path,
            kind: OutputKind::File,
        }],
        inputs,
        "",
    )
}

/// The one strategy `spec` names (commands that render one design at a time).
pub fn one_strategy(spec: &str) -> Result<Box<dyn plancache::strategy::Strategy>, CliError> {
    let mut list = strategies(spec)?;
    if list.len() != 1 {
        return Err(CliError::input(
            "export one strategy at a time; e.g. --strategy permission-mode",
        ));
    }
    Ok(list.remove(0))
}

/// The one check of a command's outputs, before any work: each output is a regular file, a
/// directory, or a stream; none names an input; no two name one file; parents are directories.
/// `dir_hint` says what to use instead of `-` or a file for a directory output.
pub fn check_outputs(
    outputs: &[Output<'_>],
    inputs: &[PathBuf],
    dir_hint: &str,
) -> Result<(), CliError> {
    plancache::export::target::check_outputs(outputs, inputs, dir_hint)
        .map_err(|e| CliError::input(e.to_string()))?;
    for o in outputs.iter().filter(|o| o.path.as_os_str() != "-") {
        check_parent(o.flag, o.path)?;
    }
    Ok(())
}

/// Splits a comma-separated list of cache model names and checks each.
pub fn cache_list(spec: &str) -> Result<Vec<String>, CliError> {
    let names: Vec<String> = spec
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let known = plancache::cache::CACHE_NAMES;
    let dym = |n: &str| did_you_mean(n, known.iter().copied());
    let names = if names.iter().any(|n| n == "all") {
        known.iter().map(|s| s.to_string()).collect()
    } else {
        names
    };
    if names.is_empty() {
        return Err(CliError::input(
            "no cache model given; e.g. --cache anthropic",
        ));
    }
    for n in &names {
        if !known.contains(&n.as_str()) {
            return Err(CliError::input(format!(
                "unknown cache model `{n}`; known models: {}, or `all`{}",
                known.join(", "),
                dym(n)
            )));
        }
    }
    Ok(names)
}

/// The cache-model parameters: documented defaults, overridden by a `--cache-config` file.
pub fn cache_config(file: Option<&Path>) -> Result<CacheConfig, CliError> {
    match file {
        Some(f) => CacheConfig::from_file(f).map_err(CliError::input),
        None => Ok(CacheConfig::default()),
    }
}

/// The prices and cache-model parameters of a replay: the bundled tables plus the user's files
/// and `--price`.
pub fn replay_env(
    pricing: &PricingArgs,
    cache_config_file: Option<&Path>,
) -> Result<plancache::engine::ReplayEnv, CliError> {
    Ok(plancache::engine::ReplayEnv {
        prices: pricing.table()?,
        caches: cache_config(cache_config_file)?,
        ..plancache::engine::ReplayEnv::default()
    })
}

/// Loads the named scenarios (default: ./scenarios), applies the scenario parameters to each
/// file before loading it, and replays them under every strategy and cache model.
pub fn load_and_replay_with(
    scenarios: &[PathBuf],
    overrides: &Overrides,
    strategies: &[Box<dyn plancache::strategy::Strategy>],
    caches: &[String],
    env: &plancache::engine::ReplayEnv,
) -> Result<(Vec<Session>, plancache::engine::RunReport), CliError> {
    use rayon::prelude::*;
    let sessions = load_sessions_with(&scenario_paths(scenarios)?, overrides)?;
    let mut env = env.clone();
    check_models(&sessions, &mut env.prices)?;
    // One session per task: a session's replays (every strategy under every cache model) and
    // its equivalence check depend on it alone, so runs joined in session order give the
    // replays and violations of one `engine::run` over all of them, and the first failing
    // session's error is the one reported, as in a serial loop.
    let parts: Vec<_> = sessions
        .par_iter()
        .map(|s| plancache::engine::run(std::slice::from_ref(s), strategies, caches, &env))
        .collect();
    let mut report = plancache::engine::RunReport::default();
    for part in parts {
        let part = part.map_err(|e| CliError::input(e.to_string()))?;
        report.replays.extend(part.replays);
        report.violations.extend(part.violations);
    }
    Ok((sessions, report))
}

/// Fails (exit 1) when strategies made different decisions on the same scenario.
pub fn check_equivalence(report: &plancache::engine::RunReport) -> Result<(), CliError> {
    if report.violations.is_empty() {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "strategies made different decisions on the same scenario:\n{}",
            report.violations.join("\n")
        )))
    }
}

/// Whether any block of the scenario carries a `cache_control` mark.
pub fn has_cache_marks(scenario: &plancache::scenario::Scenario) -> bool {
    fn walk(v: &serde_json::Value) -> bool {
        match v {
            serde_json::Value::Object(map) => map
                .iter()
                .any(|(k, v)| (k == "cache_control" && !v.is_null()) || walk(v)),
            serde_json::Value::Array(items) => items.iter().any(walk),
            _ => false,
        }
    }
    serde_json::to_value(scenario).is_ok_and(|v| walk(&v))
}

/// Comparisons that cannot show anything for this scenario: a cache model that only honours
/// explicit marks when there are none, and `model-switch` without a plan model (it then sends
/// exactly what `permission-mode` sends). `strategies` and `caches` limit the notes to what
/// the command runs (None: every one).
pub fn noop_notes(
    scenario: &plancache::scenario::Scenario,
    strategies: Option<&[&str]>,
    caches: Option<&[String]>,
) -> Vec<String> {
    let mut out = Vec::new();
    let runs_cache = |c: &str| caches.is_none_or(|cs| cs.iter().any(|x| x == c));
    let runs_strategy = |s: &str| strategies.is_none_or(|ss| ss.contains(&s));
    if runs_cache("anthropic-explicit") && !has_cache_marks(scenario) {
        out.push(format!(
            "{}: no block has a `cache_control` mark, so the anthropic-explicit cache model caches nothing (0% hit rate under every strategy)\n  hint: mark blocks with cache_control = \"5m\" (docs/scenario-format.md), or compare with --cache anthropic (automatic breakpoints)",
            scenario.name
        ));
    }
    if runs_strategy("model-switch")
        && scenario
            .plan_model
            .as_ref()
            .is_none_or(|p| *p == scenario.model)
    {
        out.push(format!(
            "{}: no `plan_model`, so model-switch sends exactly what permission-mode sends\n  hint: set plan_model (e.g. plan_model = \"claude-opus-4-6\") to compare a model switch in plan mode",
            scenario.name
        ));
    }
    out
}

/// Refuses a generated scenario whose requests exceed its model's context window under any
/// strategy (replayed on the `ideal` cache: prompt sizes do not depend on the cache model).
pub fn refuse_over_context(text: &str, label: &str) -> Result<(), CliError> {
    let path = Path::new("<generated>");
    let scenario = plancache::scenario::load_str(text, path)
        .map_err(|e| CliError::failed(format!("{label} does not load: {e}")))?;
    let tok = std::sync::Arc::new(plancache::prompt::Tokenizer::new(scenario.tokenizer));
    let session = Session::new(scenario, path, text, tok)
        .map_err(|e| CliError::failed(format!("{label} does not load: {e}")))?;
    let mut env = plancache::engine::ReplayEnv::default();
    let sessions = [session];
    check_models(&sessions, &mut env.prices)?;
    let report = plancache::engine::run(
        &sessions,
        &plancache::strategy::all(),
        &["ideal".to_string()],
        &env,
    )
    // The generator only draws valid scenarios, so a replay that stops comes from the
    // parameters' values (a wait whose clock overflows): bad input, as the parameters are.
    .map_err(|e| {
        CliError::input(format!(
            "{label}: {e}\n  hint: lower the generator parameter the message points at (e.g. --review-wait)"
        ))
    })?;
    match plancache::metrics::first_overrun(report.rows(), &env.prices) {
        Some(why) => Err(CliError::input(format!(
            "{label}: {why}\n  hint: lower the sizes (e.g. --exploration-rounds, --result-tokens), or pass --allow-over-context to write it anyway"
        ))),
        None => Ok(()),
    }
}

/// Every file kind `--kind` names, whichever command reads the file: session transcripts
/// (`claude-code`, `codex`), raw API request logs (`vcr`, `claude-trace`, `har`, `otel`) and
/// block-hash traces (`kv-cache-tester`, `mooncake`). One list, so `--kind` takes the same
/// values everywhere; a command refuses, with a hint, a kind it does not read.
pub const INPUT_KINDS: &[&str] = &[
    "claude-code",
    "codex",
    "vcr",
    "claude-trace",
    "har",
    "otel",
    "kv-cache-tester",
    "mooncake",
];

/// The value parser of every `--kind` flag: one of [`INPUT_KINDS`] (`kvct` is accepted for
/// `kv-cache-tester`, as `import trace` always did).
pub fn kind_parser() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(INPUT_KINDS.iter().map(|k| {
        let v = clap::builder::PossibleValue::new(*k);
        if *k == "kv-cache-tester" {
            v.alias("kvct")
        } else {
            v
        }
    }))
}

/// `--kind` of a command that reads session transcripts: `None` (told from each file's records)
/// or the harness it names; a request-log or trace kind is refused with the command that reads it.
pub fn transcript_kind(
    kind: Option<&str>,
    command: &str,
) -> Result<Option<plancache::import::Harness>, CliError> {
    let Some(k) = kind else { return Ok(None) };
    plancache::import::Harness::parse(k).map(Some).map_err(|_| {
        let reader = if ["kv-cache-tester", "kvct", "mooncake"].contains(&k) {
            "`plancache workload` and `plancache import trace` read block-hash traces"
        } else {
            "`plancache explain` and `plancache import requests` read raw request logs"
        };
        CliError::input(format!(
            "--kind {k}: {command} reads session transcripts (claude-code or codex; default: told from each file's records)\n  hint: {reader}"
        ))
    })
}

/// `--kind` of a command that reads raw API request logs: `None` (detected) or the log's kind.
pub fn log_kind(
    kind: Option<&str>,
    command: &str,
) -> Result<Option<plancache::requests::LogKind>, CliError> {
    let Some(k) = kind else { return Ok(None) };
    <super::values::LogKind as clap::ValueEnum>::from_str(k, false)
        .map(|v| Some(v.into()))
        .map_err(|_| {
            CliError::input(format!(
                "--kind {k}: {command} reads raw API request logs (vcr, claude-trace, har or otel; default: detected from the name and the first bytes)\n  hint: `plancache validate` and `plancache import` read transcripts, `plancache workload` block-hash traces"
            ))
        })
}
