//! Command-line definitions and dispatch. One file per subcommand.

mod account;
mod check;
mod common;
mod compare;
mod completions;
mod explain;
mod export;
mod generate;
mod import;
mod logs;
mod merge;
pub mod output;
mod params;
mod report;
mod run;
mod schema;
mod sweep;
mod sweep_files;
mod validate;
mod values;
mod workload;

use std::fmt;

use clap::{Parser, Subcommand};

/// Replay agent plan-mode sessions against models of real prefix caches.
///
/// plancache answers: what does this plan-mode design cost in prompt-cache hits, recomputed
/// tokens, money and latency?
#[derive(Debug, Parser)]
#[command(name = "plancache", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Most tokens of distinct content one session may declare (the resource budget; see
    /// docs/robustness.md). At most 4294967295, so every size fits the 32-bit token counts.
    #[arg(long, global = true, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=u64::from(u32::MAX)))]
    pub max_session_tokens: Option<u64>,
    /// Most steps of one session, subagents' included.
    #[arg(long, global = true, value_name = "N")]
    pub max_steps: Option<u64>,
    /// Most request streams of one session (the main one plus one per subagent).
    #[arg(long, global = true, value_name = "N")]
    pub max_streams: Option<u64>,
    /// Colour: auto (on terminals, unless NO_COLOR is set), always or never.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub color: output::ColorWhen,
    /// Refuse (exit 2) a model the price table does not list instead of pricing it as its
    /// family's nearest known model (docs/pricing.md).
    #[arg(long, global = true)]
    pub strict_pricing: bool,
}

impl Cli {
    /// The resource budget the flags ask for ([`plancache::budget::Budget::DEFAULT`] otherwise).
    pub fn budget(&self) -> plancache::budget::Budget {
        let d = plancache::budget::Budget::DEFAULT;
        plancache::budget::Budget {
            max_session_tokens: self.max_session_tokens.unwrap_or(d.max_session_tokens),
            max_steps: self.max_steps.unwrap_or(d.max_steps),
            max_streams: self.max_streams.unwrap_or(d.max_streams),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Run(run::RunArgs),
    Check(check::CheckArgs),
    Report(report::ReportArgs),
    Compare(compare::CompareArgs),
    Sweep(sweep::SweepArgs),
    Merge(merge::MergeArgs),
    Import(import::ImportArgs),
    Validate(validate::ValidateArgs),
    Export(export::ExportArgs),
    Explain(explain::ExplainArgs),
    Generate(generate::GenerateArgs),
    Schema(schema::SchemaArgs),
    Account(account::AccountArgs),
    Workload(workload::WorkloadArgs),
    Completions(completions::CompletionsArgs),
    Man(completions::ManArgs),
}

/// A failure with its exit code: 1 a check or gate failed, 2 bad input or usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    pub fn input(message: impl fmt::Display) -> Self {
        CliError {
            code: 2,
            message: message.to_string(),
        }
    }
    pub fn failed(message: impl fmt::Display) -> Self {
        CliError {
            code: 1,
            message: message.to_string(),
        }
    }
}

/// Every error of the library is bad input or a bad environment: exit 2. A failed check or
/// gate (exit 1) is decided here in the CLI, with [`CliError::failed`].
impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError::input(e.to_string())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Runs the parsed command line.
pub fn dispatch(cli: Cli) -> Result<(), CliError> {
    output::set_color(cli.color);
    plancache::budget::Budget::set_current(cli.budget());
    common::set_strict_pricing(cli.strict_pricing);
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check(args) => check::check(args),
        Command::Report(args) => report::report(args),
        Command::Compare(args) => compare::compare(args),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Merge(args) => merge::merge(args),
        Command::Import(args) => import::import(args),
        Command::Validate(args) => validate::validate(args),
        Command::Export(args) => export::export(args),
        Command::Explain(args) => explain::explain(args),
        Command::Generate(args) => generate::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Account(args) => account::run(args),
        Command::Workload(args) => workload::workload(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    }
}
