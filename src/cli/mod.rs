//! Command-line definitions and dispatch. One file per subcommand.

mod account;
mod check;
mod common;
mod compare;
mod completions;
mod export;
mod generate;
mod import;
mod merge;
pub mod output;
mod report;
mod run;
mod schema;
mod sweep;
mod validate;

use std::fmt;

use clap::{Parser, Subcommand};

pub use common::{load_sessions, scenario_paths};
pub use schema::{generator_schema, scenario_schema};

/// Replay agent plan-mode sessions against models of real prefix caches.
///
/// plancache answers: what does this plan-mode design cost in prompt-cache hits, recomputed
/// tokens, money and latency?
#[derive(Debug, Parser)]
#[command(name = "plancache", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour: auto (on terminals, unless NO_COLOR is set), always or never.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub color: output::ColorWhen,
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
    Generate(generate::GenerateArgs),
    Schema(schema::SchemaArgs),
    Account(account::AccountArgs),
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
    pub fn input(message: impl Into<String>) -> Self {
        CliError {
            code: 2,
            message: message.into(),
        }
    }
    pub fn failed(message: impl Into<String>) -> Self {
        CliError {
            code: 1,
            message: message.into(),
        }
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
        Command::Generate(args) => generate::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Account(args) => account::run(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    }
}
