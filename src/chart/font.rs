//! The one font every chart draws with, embedded so text renders on a machine with no system
//! fonts and no fontconfig.
//!
//! DejaVu Sans (Bitstream Vera license, notice in `assets/fonts/DejaVuSans-LICENSE.txt`). plotters'
//! `ab_glyph` feature looks fonts up by family name in a process-wide table; drawing with an
//! unregistered family fails with `FontUnavailable`, so every chart calls [`register`] first.
//! Criterion shares that table: a bench that enables criterion's plots must call [`register`]
//! in its config too (or run with `--noplot`).

use std::sync::Once;

use plotters::style::FontStyle;

/// The family name charts use.
pub const FAMILY: &str = "sans-serif";

/// The embedded TTF.
pub static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

static REGISTER: Once = Once::new();

/// Registers the embedded font under [`FAMILY`] (normal and bold fall back to it). Idempotent.
pub fn register() {
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType file checked in with the source (tested below), so the
        // only failure would be a corrupted build; keep going and let drawing report it then.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS);
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_font_parses() {
        assert!(plotters::style::register_font(
            "plancache-test",
            plotters::style::FontStyle::Normal,
            super::DEJAVU_SANS
        )
        .is_ok());
    }
}
