//! Terminal output: colour that follows `--color` and `NO_COLOR`, and writes to standard output
//! that fail with an error (exit 2) instead of a panic.
//!
//! Colour goes through `anstream`, which drops the escape codes when the stream is not a
//! terminal, when `NO_COLOR` is set (no-color.org), or with `--color never`.

use std::io::Write;

use anstyle::{AnsiColor, Style};

use super::CliError;

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// Colour on terminals, unless NO_COLOR is set.
    #[default]
    Auto,
    Always,
    Never,
}

/// Applies `--color` to every later write through this module.
pub fn set_color(when: ColorWhen) {
    let choice = match when {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

pub const ERROR: Style = AnsiColor::Red.on_default().bold();
pub const WARNING: Style = AnsiColor::Yellow.on_default().bold();
pub const NOTE: Style = AnsiColor::Cyan.on_default().bold();
pub const HEADER: Style = Style::new().bold();

/// `text` wrapped in `style`'s escape codes (removed later when colour is off).
pub fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

fn stdout_error(e: std::io::Error) -> CliError {
    CliError::input(format!("cannot write to standard output: {e}"))
}

/// Writes bytes to standard output unchanged (machine formats carry no colour).
pub fn stdout_bytes(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(stdout_error)
}

/// Writes text that may carry colour to standard output.
pub fn stdout_text(text: &str) -> Result<(), CliError> {
    let mut out = anstream::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(stdout_error)
}

/// `label: message` on standard error, the label coloured.
pub fn stderr_line(style: Style, label: &str, message: &str) {
    let mut err = anstream::stderr().lock();
    let _ = writeln!(err, "{}: {message}", paint(style, label));
}

/// `warning: …` on standard error.
pub fn warn(message: &str) {
    stderr_line(WARNING, "warning", message);
}

/// Whether standard output was closed at start-up (`plancache run ... >&-`) and replaced by
/// [`watch_closed_stdout`]'s stand-in.
static STDOUT_WAS_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Rust's runtime puts `/dev/null` on a standard descriptor that is closed at start-up, so a
/// table printed with `>&-` would be lost with exit 0. `main` sees descriptor 1 before that
/// (`closed_at_start`); when it was closed, this puts an anonymous in-memory file there instead
/// of `/dev/null`, and [`closed_stdout_error`] then tells whether anything was printed into it.
pub fn watch_closed_stdout(closed_at_start: bool) {
    if !closed_at_start {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: called once at start-up, before any other thread exists; replaces descriptor 1
    // (the runtime's `/dev/null`) by a new memfd.
    unsafe {
        let fd = libc::memfd_create(c"plancache-closed-stdout".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return;
        }
        if fd != 1 {
            libc::dup2(fd, 1);
            libc::close(fd);
        }
        STDOUT_WAS_CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The error when standard output was closed at start-up and the command printed something
/// to it (that output is lost): exit 2, like any other failed write to standard output.
pub fn closed_stdout_error() -> Option<CliError> {
    if !STDOUT_WAS_CLOSED.load(std::sync::atomic::Ordering::SeqCst) {
        return None;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: fstat on descriptor 1 (the memfd put there) into a zeroed struct.
        let size = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(1, &mut st) != 0 {
                return None;
            }
            st.st_size
        };
        if size > 0 {
            return Some(stdout_error(std::io::Error::other(
                "it is closed, and the output was lost",
            )));
        }
    }
    None
}
