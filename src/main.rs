use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = match plancache::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match plancache::cli::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            plancache::cli::output::stderr_line(plancache::cli::output::ERROR, "error", &e.message);
            ExitCode::from(e.code)
        }
    }
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`plancache check | head`) would fail with
/// an error on every write; the default action ends the process quietly, as command-line tools do.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up, before any other thread exists; only resets a signal
    // disposition to its default.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
