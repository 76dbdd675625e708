//! `plancache completions SHELL` and `plancache man`: shell completion scripts and man pages
//! generated from the same clap definitions as `--help`, so they never drift from the CLI.

use std::path::PathBuf;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, CliError};

/// Print a shell completion script.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache completions bash > ~/.local/share/bash-completion/completions/plancache
  plancache completions zsh > ~/.zfunc/_plancache        # with fpath+=~/.zfunc before compinit
  plancache completions fish > ~/.config/fish/completions/plancache.fish
  plancache completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn completions(args: CompletionsArgs) -> Result<(), CliError> {
    let mut cmd = Cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "plancache", &mut bytes);
    super::output::stdout_bytes(&bytes)
}

/// Print the man page (roff), or write one page per subcommand into a directory.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  plancache man | man -l -
  plancache man --out ~/.local/share/man/man1    # plancache.1, plancache-run.1, ...")]
pub struct ManArgs {
    /// Write plancache.1 and one page per subcommand into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn man(args: ManArgs) -> Result<(), CliError> {
    let cmd = Cli::command();
    match &args.out {
        None => {
            let mut bytes = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut bytes)
                .map_err(|e| CliError::input(format!("cannot render the man page: {e}")))?;
            super::output::stdout_bytes(&bytes)
        }
        Some(dir) => {
            super::common::check_out_dir(dir, "omit --out to print the main page")?;
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::input(format!("{}: cannot create: {e}", dir.display())))?;
            clap_mangen::generate_to(cmd, dir).map_err(|e| {
                CliError::input(format!("{}: cannot write man pages: {e}", dir.display()))
            })?;
            eprintln!("wrote {}", dir.display());
            Ok(())
        }
    }
}
