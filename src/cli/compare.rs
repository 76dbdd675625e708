//! `plancache compare`: the CI gate against a saved baseline.

use super::common::PricingArgs;
use std::path::PathBuf;

use clap::Args;

use super::common::{cache_list, load_and_replay_with, strategies, Sink};
use super::params::ParamArgs;
use super::{output, CliError};
use plancache::compare::{self, Dataset, Limit, Metric, Rule, Thresholds};

/// A hit-rate limit, checked and kept as written.
fn rate_text(s: &str) -> Result<String, compare::CompareError> {
    Limit::parse_rate(s).map(|_| s.trim().to_string())
}

/// A cost or TTFT limit, checked and kept as written.
fn limit_text(s: &str) -> Result<String, compare::CompareError> {
    Limit::parse(s).map(|_| s.trim().to_string())
}

/// The thresholds of the command line, with their text as given for the summaries.
fn thresholds(args: &CompareArgs) -> Result<Thresholds, CliError> {
    let given = [
        (Metric::HitRate, &args.max_hit_rate_drop),
        (Metric::Cost, &args.max_cost_increase),
        (Metric::Ttft, &args.max_ttft_increase),
    ]
    .into_iter()
    .map(|(m, t)| (m.name(), t.clone()))
    .collect();
    Ok(Thresholds {
        hit_rate_drop: Some(Limit::parse_rate(&args.max_hit_rate_drop).map_err(CliError::input)?),
        cost_increase: Some(Limit::parse(&args.max_cost_increase).map_err(CliError::input)?),
        ttft_increase: Some(Limit::parse(&args.max_ttft_increase).map_err(CliError::input)?),
        given,
    })
}

/// Compare a run with a baseline; exit 1 on a regression or a broken rule (for CI).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache run scenarios --out baseline                 # save a baseline (commit it)
  plancache compare --baseline baseline/summary.csv      # re-run ./scenarios and gate
  plancache compare --baseline baseline/run.json --current pr/summary.csv --max-cost-increase 5%
  plancache compare --baseline baseline --rule 'permission-mode<=toolset-swap:cost' >> \"$GITHUB_STEP_SUMMARY\"

Hit-rate limits are points: `2%` or `0.02` (a bare number above 1 is an error). Cost and TTFT
limits are in the metric's unit (USD, ms) or a percent of the baseline value (5%).
Default: 0, any worsening fails.
Rules: A<=B:METRIC (A no worse than B), A<B:METRIC (A strictly better), optional +LIMIT tolerance;
METRIC is cost, hit-rate, ttft or recomputed; checked in the current run for every scenario and
cache model that has both strategies.
Exit codes: 0 passed, 1 a limit or rule failed, 2 bad input.")]
pub struct CompareArgs {
    /// Scenario files or directories to run as the current figures (default: ./scenarios).
    pub scenarios: Vec<PathBuf>,
    /// Baseline: summary.csv (requests.csv beside it adds break reasons), run.json, or their directory.
    #[arg(long)]
    pub baseline: PathBuf,
    /// Current figures from a file instead of running scenarios.
    #[arg(long, conflicts_with = "scenarios")]
    pub current: Option<PathBuf>,
    /// Largest allowed hit-rate drop per scenario x strategy x cache, in points: `5%` or
    /// `0.05` (a bare number above 1 is refused).
    #[arg(long, default_value = "0", value_parser = rate_text)]
    pub max_hit_rate_drop: String,
    /// Largest allowed cost increase.
    #[arg(long, default_value = "0", value_parser = limit_text)]
    pub max_cost_increase: String,
    /// Largest allowed increase of mean TTFT.
    #[arg(long, default_value = "0", value_parser = limit_text)]
    pub max_ttft_increase: String,
    /// A rule between strategies, e.g. `permission-mode<=toolset-swap:cost` (repeatable).
    #[arg(long = "rule", value_parser = Rule::parse)]
    pub rules: Vec<Rule>,
    /// Strategies to run (when running scenarios), comma-separated, or `all`.
    #[arg(long, default_value = "all")]
    pub strategy: String,
    /// Cache models to run (default: those in the baseline).
    #[arg(long)]
    pub cache: Option<String>,
    // The price table: `--pricing FILE` and `--price SPEC`.
    #[command(flatten)]
    pub pricing: PricingArgs,
    /// Cache model parameters (see `plancache run --help`).
    #[arg(long, value_name = "FILE")]
    pub cache_config: Option<PathBuf>,
    /// Also write the Markdown summary to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one line per violation and the verdict instead of the Markdown summary.
    #[arg(long, short = 'q', conflicts_with = "json")]
    pub quiet: bool,
    /// Print the outcome as JSON instead of the Markdown summary.
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Baseline points the current run does not have are listed, not violations (gate a
    /// subset of the baseline's scenarios).
    #[arg(long)]
    pub allow_missing: bool,
    /// Parameters on the scenario files run as the current figures (--model, --ttl,
    /// --keepalive, --set).
    #[command(flatten)]
    pub params: ParamArgs,
}

pub fn compare(args: CompareArgs) -> Result<(), CliError> {
    // The summary is printed anyway: `--out -` adds nothing.
    let out = match &args.out {
        Some(p) => match Sink::parse("--out", p)? {
            Sink::Stdout => None,
            file => Some(file),
        },
        None => None,
    };
    check_out(&args)?;
    if args.current.is_some() {
        args.params
            .refuse("--current reads figures instead of replaying scenarios")?;
    }
    let baseline = Dataset::load(&args.baseline).map_err(CliError::input)?;
    let cap = compare::figures::request_cap(
        &args.pricing.table()?,
        &plancache::budget::Budget::current(),
    );
    baseline.check_figures(cap).map_err(CliError::input)?;
    if baseline.points.is_empty() {
        return Err(CliError::input(format!(
            "{}: the baseline has no rows\n  hint: save one with `plancache run ... --out DIR`",
            baseline.source
        )));
    }
    let current = current(&args, &baseline, cap)?;
    let thresholds = thresholds(&args)?;
    let mut outcome = compare::compare(&baseline, &current, &thresholds, &args.rules);
    if args.allow_missing {
        outcome.allow_missing();
    }
    let md = compare::markdown(&outcome, &baseline, &current, &thresholds);
    let shown = if args.json {
        compare::json(&outcome, &baseline, &current, &thresholds)
    } else if args.quiet {
        compare::quiet(&outcome, &baseline, &thresholds)
    } else {
        md.clone()
    };
    output::stdout_bytes(shown.as_bytes())?;
    if let Some(sink) = &out {
        sink.write(md.as_bytes())?;
    }
    if outcome.passed() {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "plancache compare: {} violation(s) against {}",
            outcome.failures(),
            baseline.source
        )))
    }
}

/// `--out` names no input and no device it would replace (checked before any work).
fn check_out(args: &CompareArgs) -> Result<(), CliError> {
    let Some(path) = &args.out else {
        return Ok(());
    };
    let mut inputs = vec![args.baseline.clone()];
    inputs.extend(
        args.current
            .iter()
            .chain(&args.pricing.file)
            .chain(&args.cache_config)
            .cloned(),
    );
    inputs.extend(super::common::scenario_paths(&args.scenarios).unwrap_or_default());
    super::common::check_file_out("--out", path, &inputs)
}

/// The figures to gate: `--current`'s file, or a replay of the scenarios under the baseline's
/// cache models (or `--cache`).
fn current(args: &CompareArgs, baseline: &Dataset, cap: f64) -> Result<Dataset, CliError> {
    if let Some(path) = &args.current {
        let d = Dataset::load(path).map_err(CliError::input)?;
        d.check_figures(cap).map_err(CliError::input)?;
        return Ok(d);
    }
    let strategies = strategies(&args.strategy)?;
    let caches = match &args.cache {
        Some(spec) => cache_list(spec)?,
        None => cache_list(&compare::caches(baseline).join(",")).map_err(|e| {
            CliError::input(format!(
                "{}: {}\n  hint: pass --cache to choose the models to run",
                baseline.source, e.message
            ))
        })?,
    };
    let mut env = super::common::replay_env(&args.pricing, args.cache_config.as_deref())?;
    args.params.apply_env(&mut env);
    let overrides = args.params.overrides();
    let (_, run) = load_and_replay_with(&args.scenarios, &overrides, &strategies, &caches, &env)?;
    Ok(Dataset::from_run(&run, "this run"))
}
