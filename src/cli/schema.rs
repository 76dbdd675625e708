//! `plancache schema`: the JSON Schema of the scenario format, derived from its serde types.

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use plancache::export::write_atomic;
use plancache::scenario::files::{generator_schema, scenario_schema};

/// Print the JSON Schema of the scenario format, for editor validation and completion.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache schema > plancache.schema.json
  plancache schema --out plancache.schema.json
  plancache schema --generator --out generator.schema.json   # params files of `plancache generate`

Editors (Even Better TOML / taplo): put `#:schema ./plancache.schema.json` on the first line of a
scenario, or in .taplo.toml:
  [[schema]]
  path = \"plancache.schema.json\"
  include = [\"scenarios/**/*.toml\"]")]
pub struct SchemaArgs {
    /// Write the schema to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The schema of `plancache generate --params` files instead of scenarios.
    #[arg(long)]
    pub generator: bool,
}

pub fn run(args: SchemaArgs) -> Result<(), CliError> {
    let text = if args.generator {
        generator_schema()
    } else {
        scenario_schema()
    };
    match &args.out {
        Some(path) => {
            super::common::check_file_out("--out", path, &[])?;
            write_atomic(path, text.as_bytes()).map_err(CliError::input)
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
