//! Colours, sizes and the backend plumbing shared by every chart.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::Phase;
use super::font::{self, FAMILY};
use super::ChartError;
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
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let mut y = 40;
    for (name, color, filled_box) in entries {
        if *filled_box {
            area.draw(&Rectangle::new([(8, y - 7), (30, y + 7)], color.filled()))
                .map_err(err)?;
            // Outlined, so a pale swatch shows on the white ground.
            area.draw(&Rectangle::new(
                [(8, y - 7), (30, y + 7)],
                RGBColor(90, 90, 90).stroke_width(1),
            ))
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
pub fn err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// Something that draws itself on any plotters backend.
pub trait Draw {
    /// Draws the chart on `root`, which it fills entirely.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static;
}

/// Renders to an SVG document.
pub fn svg<D: Draw>(chart: &D) -> Result<String, ChartError> {
    font::register();
    // A bundled chart's SVG is 15 to 40 KB: one allocation instead of a dozen doublings.
    let mut out = String::with_capacity(48 << 10);
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        chart.draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Renders to a PNG file through a temporary file and a rename.
pub fn png<D: Draw>(chart: &D, path: &Path) -> Result<(), ChartError> {
    font::register();
    let (w, h) = SIZE;
    BUFFERS.with(|b| {
        let (pixels, bytes) = &mut *b.borrow_mut();
        // Every chart fills its whole canvas first; the zeros only size the buffer.
        pixels.clear();
        pixels.resize((w * h * 3) as usize, 0);
        {
            // Text through `raster::Glyphs`: plotters' own glyph placement spaces letters
            // unevenly.
            let root = super::raster::Glyphs::with_buffer(pixels, SIZE).into_drawing_area();
            chart.draw(&root)?;
            root.present().map_err(err)?;
        }
        bytes.clear();
        encode_png_into(pixels, w, h, bytes).map_err(|e| ChartError::PngFile {
            path: path.to_path_buf(),
            source: Box::new(e),
        })?;
        // Written as plotters wrote it: a temporary file renamed into place, no sync of its own.
        crate::export::write_atomic_with(path, |tmp| {
            std::fs::write(tmp, &bytes[..]).map_err(|e| format!("{}: {e}", tmp.display()))
        })?;
        Ok(())
    })
}

thread_local! {
    /// Per rendering thread, the pixel buffer of a chart (2.1 MB) and its encoded PNG, reused
    /// from chart to chart: a report draws hundreds, and fresh buffers of that size come from the
    /// kernel as new zeroed pages every time (a sixth of `report --cache all`'s CPU time).
    static BUFFERS: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Encodes 8-bit RGB pixels as PNG. plotters saves through `image`, whose encoder (fast deflate)
/// tries all five row filters on every row and keeps the best. On the bundled charts one fixed
/// filter, Paeth, encodes in two thirds of the time for files 5% larger (measured over
/// `results/report/charts`: 2.7 against 4.1 ms and 116 against 111 KB per chart; `Sub` was
/// 2.2 ms but 173 KB). The pixels are the same; only the compressed bytes differ.
/// The PNG is appended to `out` (a buffer kept from chart to chart).
fn encode_png_into(
    rgb: &[u8],
    width: u32,
    height: u32,
    out: &mut Vec<u8>,
) -> Result<(), ChartError> {
    {
        let mut enc = ::png::Encoder::new(out, width, height);
        enc.set_color(::png::ColorType::Rgb);
        enc.set_depth(::png::BitDepth::Eight);
        enc.set_compression(::png::Compression::Fast);
        enc.set_filter(::png::FilterType::Paeth);
        enc.set_adaptive_filter(::png::AdaptiveFilterType::NonAdaptive);
        let mut writer = enc.write_header()?;
        writer.write_image_data(rgb)?;
        writer.finish()?;
    }
    Ok(())
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

    /// Lines, a filled box and text in several colours and sizes, drawn twice.
    struct Sample;

    impl Draw for Sample {
        fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError>
        where
            DB::ErrorType: 'static,
        {
            root.fill(&WHITE).map_err(err)?;
            for (i, name) in ["toolset-swap", "permission-mode", "history-reset"]
                .iter()
                .enumerate()
            {
                let y = 60 + 90 * i as i32;
                root.draw(&PathElement::new(
                    vec![(40, y), (600, y + 200)],
                    strategy_color(name).stroke_width(3),
                ))
                .map_err(err)?;
                for _ in 0..2 {
                    root.draw(&Text::new(
                        format!("{name}: $0.9173"),
                        (620, y),
                        text(14 + 4 * i as u32).color(&strategy_color(name)),
                    ))
                    .map_err(err)?;
                }
            }
            root.draw(&Rectangle::new(
                [(100, 400), (300, 500)],
                phase_color(Phase::Plan).filled(),
            ))
            .map_err(err)?;
            Ok(())
        }
    }

    fn decode(path: &Path) -> Vec<u8> {
        let dec = ::png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), SIZE);
        assert_eq!(info.color_type, ::png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        buf
    }

    #[test]
    fn the_png_encoder_keeps_every_pixel_of_plotters_own_save() {
        font::register();
        let dir = tempfile::tempdir().unwrap();
        // plotters' own path: its bitmap backend saves the file through `image` on `present`
        // (the pixels drawn by `Glyphs`, copied in).
        let (w, h) = SIZE;
        let mut drawn = vec![0u8; (w * h * 3) as usize];
        {
            let root =
                super::super::raster::Glyphs::with_buffer(&mut drawn, SIZE).into_drawing_area();
            Sample.draw(&root).unwrap();
            root.present().unwrap();
        }
        let theirs = dir.path().join("theirs.png");
        {
            let mut b = BitMapBackend::new(&theirs, SIZE);
            b.blit_bitmap((0, 0), SIZE, &drawn).unwrap();
            b.present().unwrap();
        }
        let ours = dir.path().join("ours.png");
        png(&Sample, &ours).unwrap();
        // Twice: the second draws every text from the glyph cache.
        let again = dir.path().join("again.png");
        png(&Sample, &again).unwrap();
        let want = decode(&theirs);
        assert!(want == drawn, "plotters' own PNG lost pixels");
        assert!(want.iter().any(|&b| b != 255), "the sample drew nothing");
        assert!(
            decode(&ours) == want,
            "pixels differ from plotters' own PNG"
        );
        assert!(decode(&again) == want, "the glyph cache changed pixels");
    }
}
