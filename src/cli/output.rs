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
pub const GOOD: Style = AnsiColor::Green.on_default();

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
