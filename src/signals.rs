//! SIGINT and SIGTERM as a flag: the handler only records the signal; writers check the flag
//! ([`check`]) and stop, so the output-directory transaction can remove its temporary files and
//! leave the previous output as it was. A second signal ends the process at once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use signal_hook::consts::{SIGINT, SIGTERM};

/// The first termination signal received (0: none).
static RECEIVED: AtomicUsize = AtomicUsize::new(0);
/// Set with the first signal; arms the immediate exit on the second.
static ARMED: AtomicBool = AtomicBool::new(false);

/// Installs the handlers, once per process (later calls do nothing). Writers call this before
/// they create their first temporary file: until then a signal ends the process as usual (nothing
/// is on disk yet), from then on it only sets the flag.
pub fn install() -> Result<(), InstallError> {
    static INSTALLED: OnceLock<Result<(), InstallError>> = OnceLock::new();
    INSTALLED.get_or_init(register).clone()
}

/// The handlers could not be installed (the reason as the system gave it: the result is kept
/// for every later call, and `io::Error` is not `Clone`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot install a signal handler: {reason}")]
pub struct InstallError {
    /// The system's reason.
    reason: String,
}

/// A SIGINT or SIGTERM arrived: the work stops and the writers leave the earlier output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by {name}")]
pub struct Interrupted {
    /// `SIGINT`, `SIGTERM` (or `a signal`).
    name: &'static str,
}

fn register() -> Result<(), InstallError> {
    let failed = |e: std::io::Error| InstallError {
        reason: e.to_string(),
    };
    for sig in [SIGINT, SIGTERM] {
        // The shutdown goes first: it fires only once ARMED was set by an earlier signal.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, &ARMED).map_err(failed)?;
        signal_hook::flag::register_usize(sig, &RECEIVED, sig as usize).map_err(failed)?;
        signal_hook::flag::register(sig, &ARMED).map_err(failed)?;
    }
    Ok(())
}

/// The signal number received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n as i32),
    }
}

/// `Err` once SIGINT or SIGTERM arrived: long loops and writers call this and stop.
pub fn check() -> Result<(), Interrupted> {
    match received() {
        None => Ok(()),
        Some(sig) => Err(Interrupted { name: name(sig) }),
    }
}

fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
