//! Colours, sizes and the backend plumbing shared by every chart.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::Phase;
use super::font::{self, FAMILY};
use crate::plan_mode::Mode;

/// Pixel size of every chart.
pub const SIZE: (u32, u32) = (1100, 640);

/// One fixed colour per strategy name, so a strategy has the same colour in every chart of every
/// report whatever `--strategy` order or subset produced it (the Tableau 10 colours). A name
/// missing here (a strategy added later) gets a colour from [`FALLBACK`] chosen by a hash of the
/// name: still stable across reports, so adding a strategy needs no line here.
const STRATEGY_COLORS: [(&str, RGBColor); 10] = [
    ("toolset-swap", RGBColor(31, 119, 180)),
    ("permission-mode", RGBColor(214, 39, 40)),
    ("system-swap", RGBColor(44, 160, 44)),
    ("history-reset", RGBColor(255, 127, 14)),
    ("model-switch", RGBColor(148, 103, 189)),
    ("deferred-tools", RGBColor(140, 86, 75)),
    ("masked", RGBColor(227, 119, 194)),
    ("system-message", RGBColor(127, 127, 127)),
    ("frozen-tools", RGBColor(188, 189, 34)),
    ("system-swap-tools", RGBColor(23, 190, 207)),
];

/// Colours for strategy names not in [`STRATEGY_COLORS`] (darker shades of the same hues).
const FALLBACK: [RGBColor; 6] = [
    RGBColor(23, 76, 120),
    RGBColor(150, 20, 30),
    RGBColor(30, 105, 30),
    RGBColor(190, 85, 0),
    RGBColor(95, 60, 140),
    RGBColor(20, 130, 140),
];

/// The colour of a strategy's line, marker and break label: fixed by its name.
pub fn strategy_color(name: &str) -> RGBColor {
    match STRATEGY_COLORS.iter().find(|(n, _)| *n == name) {
        Some((_, c)) => *c,
        None => {
            let h = xxhash_rust::xxh3::xxh3_64(name.as_bytes());
            FALLBACK[(h % FALLBACK.len() as u64) as usize]
        }
    }
}

/// Background of a timeline phase.
pub fn phase_color(p: Phase) -> RGBColor {
    match p {
        Phase::Plan => RGBColor(158, 202, 225),
        Phase::After(_) => RGBColor(161, 217, 155),
        Phase::Before(Mode::Default) => RGBColor(222, 222, 222),
        Phase::Before(_) => RGBColor(253, 208, 162),
    }
}

/// Text style of the given pixel size in the embedded font.
pub fn text(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

/// Pixel width of the legend column right of a chart.
pub const LEGEND: u32 = 210;

/// Pixel height of one legend line, and the gap between entries.
const LEGEND_LINE: i32 = 20;
const LEGEND_GAP: i32 = 8;

/// The y (px) just below the last legend entry.
pub fn legend_height(entries: &[(String, RGBColor, bool)]) -> i32 {
    40 + entries
        .iter()
        .map(|(n, _, _)| n.lines().count().max(1) as i32 * LEGEND_LINE + LEGEND_GAP)
        .sum::<i32>()
        - LEGEND_LINE / 2
}

/// A legend drawn in its own column, so it never hides data: one swatch and name per entry. A
/// name with line breaks takes several lines (coinciding series list every member).
pub fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBColor, bool)],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let mut y = 40;
    for (name, color, filled_box) in entries {
        if *filled_box {
            area.draw(&Rectangle::new([(8, y - 7), (30, y + 7)], color.filled()))
                .map_err(err)?;
        } else {
            area.draw(&PathElement::new(
                vec![(6, y), (32, y)],
                color.stroke_width(4),
            ))
            .map_err(err)?;
        }
        for line in name.lines() {
            area.draw(&Text::new(
                line.to_string(),
                (40, y),
                text(16).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                )),
            ))
            .map_err(err)?;
            y += LEGEND_LINE;
        }
        y += LEGEND_GAP;
    }
    Ok(())
}

/// Maps any plotters error to a message.
pub fn err<E: std::fmt::Display>(e: E) -> String {
    format!("cannot draw chart: {e}")
}

/// Something that draws itself on any plotters backend.
pub trait Draw {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static;
}

/// Renders to an SVG document.
pub fn svg<D: Draw>(chart: &D) -> Result<String, String> {
    font::register();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        chart.draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Renders to a PNG file through a temporary file and a rename.
pub fn png<D: Draw>(chart: &D, path: &Path) -> Result<(), String> {
    font::register();
    crate::export::write_atomic_with(path, |tmp| {
        // Text through `raster::Glyphs`: plotters' own glyph placement spaces letters unevenly.
        let root = super::raster::Glyphs(BitMapBackend::new(tmp, SIZE)).into_drawing_area();
        chart.draw(&root)?;
        root.present().map_err(err)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_strategy_has_its_own_fixed_colour() {
        let names = crate::strategy::names();
        let colors: Vec<RGBColor> = names.iter().map(|n| strategy_color(n)).collect();
        for (i, c) in colors.iter().enumerate() {
            assert!(
                STRATEGY_COLORS.iter().any(|(n, _)| *n == names[i]),
                "{} has no fixed colour",
                names[i]
            );
            assert!(!colors[..i].contains(c), "{} shares a colour", names[i]);
        }
        assert_eq!(strategy_color("toolset-swap"), RGBColor(31, 119, 180));
        // An unknown name: the same colour on every call.
        assert_eq!(strategy_color("my-own"), strategy_color("my-own"));
    }
}
