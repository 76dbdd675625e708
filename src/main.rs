use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

mod cli;

fn main() -> ExitCode {
    plancache::util::heap::keep_freed_memory();
    cli::output::watch_closed_stdout(STDOUT_CLOSED_AT_START.load(Ordering::SeqCst));
    quiet_output_error_panics();
    let outcome = std::panic::catch_unwind(|| {
        let cli = match cli::Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => {
                let code = if e.use_stderr() { 2 } else { 0 };
                let _ = e.print();
                return Ok(code);
            }
        };
        cli::dispatch(cli).map(|()| 0)
    });
    let result = match outcome {
        Ok(r) => r,
        Err(payload) => match payload_text(payload.as_ref()).and_then(output_error) {
            // A write to a full disk or a closed terminal: the output is incomplete, bad
            // environment rather than a bug.
            Some(message) => Err(cli::CliError::input(message)),
            None => std::panic::resume_unwind(payload),
        },
    };
    // Buffered standard output is flushed here, where an error can still change the exit code.
    let flushed = std::io::stdout().flush();
    // A closed standard output (`>&-`) that was printed to, or a pipe closed by its reader
    // (SIGPIPE is left ignored, so the write fails with EPIPE): exit 2, not 0 or a signal.
    let result = match (result, cli::output::closed_stdout_error()) {
        (Ok(_), Some(e)) => Err(e),
        (r, _) => r,
    };
    // A signal that arrived once the work was complete changes nothing; one that stopped it ends
    // with 128 + its number, as a shell reports a killed process.
    if let (Some(sig), Err(_)) = (plancache::export::interrupted_by(), &result) {
        let _ = writeln!(
            std::io::stderr(),
            "error: interrupted; the files of this run were not written (earlier output is unchanged)"
        );
        return ExitCode::from(u8::try_from(128 + sig).unwrap_or(1));
    }
    match (result, flushed) {
        (Ok(code), Ok(())) => ExitCode::from(code),
        (Ok(_), Err(e)) => {
            let _ = writeln!(
                std::io::stderr(),
                "error: cannot write to standard output: {e}"
            );
            ExitCode::from(2)
        }
        (Err(e), _) => {
            cli::output::stderr_line(cli::output::ERROR, "error", &e.message);
            ExitCode::from(e.code)
        }
    }
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
}

/// The message of a panic raised by `print!`/`eprint!` when the stream cannot be written.
fn output_error(text: &str) -> Option<String> {
    let stream = [("stdout", "output"), ("stderr", "error")]
        .into_iter()
        .find(|(s, _)| text.starts_with(&format!("failed printing to {s}")))?;
    let reason = text.split_once(": ").map_or(text, |(_, r)| r);
    Some(format!("cannot write to standard {}: {reason}", stream.1))
}

/// `print!` panics when standard output cannot be written (`plancache run > /dev/full`); such a
/// panic is turned into exit 2 by `main`, so its default report ("thread main panicked") is
/// suppressed. Every other panic is reported as usual.
fn quiet_output_error_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if payload_text(info.payload())
            .and_then(output_error)
            .is_none()
        {
            default(info);
        }
    }));
}

/// Whether descriptor 1 was closed when the process started (`plancache run ... >&-`), seen
/// by [`CHECK_STDOUT`] before Rust's runtime opens `/dev/null` there.
static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Runs from `.init_array`, before the Rust runtime's start-up replaces closed standard
/// descriptors.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static CHECK_STDOUT: extern "C" fn() = {
    extern "C" fn check() {
        // SAFETY: F_GETFD only queries the descriptor's flags.
        if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
            STDOUT_CLOSED_AT_START.store(true, Ordering::SeqCst);
        }
    }
    check
};
