//! Text on PNG charts with even letter spacing.
//!
//! plotters 0.3.7 rasterises `ab_glyph` text by drawing each glyph's outline from the pen
//! position, dropping the glyph's left side bearing and truncating the pen to whole pixels
//! (`src/style/font/ab_glyph.rs`, `FontDataInternal::draw`). Glyphs with a wide bearing (`1`,
//! `.`, `$`, `r`) then sit too far left, and labels read "$0.9 173" or "p er session". The SVG
//! backend is unaffected (the viewer lays the text out). [`Glyphs`] wraps a bitmap backend and
//! draws text itself: each glyph positioned at its fractional pen position by ab_glyph, so the
//! bearing is kept and kerning applies. The layout box (width, height, anchor, baseline and
//! rotation) is the same as plotters', so nothing else on a chart moves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use ab_glyph::{point, Font, FontRef, GlyphId, PxScale, ScaleFont};
use plotters::backend::BitMapBackend;
use plotters_backend::{
    text_anchor::{HPos, VPos},
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

use super::font::DEJAVU_SANS;

/// The embedded font, parsed once.
fn font() -> &'static FontRef<'static> {
    static FONT: OnceLock<FontRef<'static>> = OnceLock::new();
    FONT.get_or_init(|| {
        // Checked in with the source and parsed by `font::tests::embedded_font_parses`.
        FontRef::try_from_slice(DEJAVU_SANS).expect("embedded DejaVu Sans parses")
    })
}

/// Every inked pixel of `text` at `size` px, as (x, y, coverage) in the text's own frame: the
/// pen starts at x = 0 and the baseline lies at y = size / 2, as in plotters.
pub fn glyph_pixels(text: &str, size: f64, mut pixel: impl FnMut(i32, i32, f32)) {
    let scale = PxScale::from(size as f32);
    let scaled = font().as_scaled(scale);
    let baseline = size as f32 / 2.0;
    let mut caret = 0f32;
    let mut prev: Option<GlyphId> = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            caret += scaled.kern(p, id);
        }
        let glyph = id.with_scale_and_position(scale, point(caret, baseline));
        caret += scaled.h_advance(id);
        prev = Some(id);
        if let Some(outline) = scaled.outline_glyph(glyph) {
            let b = outline.px_bounds();
            outline
                .draw(|x, y, cov| pixel(b.min.x as i32 + x as i32, b.min.y as i32 + y as i32, cov));
        }
    }
}

/// The inked pixels of one text at one size.
type Pixels = Arc<[(i32, i32, f32)]>;

/// How many rasterised texts [`cached_pixels`] keeps (a report draws a few hundred distinct
/// labels; the cache starts afresh when full).
const CACHE_TEXTS: usize = 4096;

/// [`glyph_pixels`] of `text` at `size`, rasterised once per process: a report draws the same
/// tick labels, legend names and axis titles on every chart, and rasterising outlines was a
/// tenth of its CPU (perf). The pixels are the same as a fresh rasterisation.
fn cached_pixels(text: &str, size: f64) -> Pixels {
    static CACHE: OnceLock<Mutex<HashMap<(String, u64), Pixels>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (text.to_string(), size.to_bits());
    if let Some(p) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return p;
    }
    let mut v = Vec::new();
    // Uncovered pixels of a glyph's box are left out: the bitmap backend draws nothing for a
    // colour of alpha 0 (`plotters-bitmap`'s `draw_pixel` returns early), so the result is the
    // same with fewer calls.
    glyph_pixels(text, size, |x, y, cov| {
        if cov > 0.0 {
            v.push((x, y, cov));
        }
    });
    let p: Pixels = v.into();
    if let Ok(mut c) = cache.lock() {
        if c.len() >= CACHE_TEXTS {
            c.clear();
        }
        c.insert(key, p.clone());
    }
    p
}

/// Width in px of `text` at `size` px: advances and kerning of the embedded font (what
/// [`glyph_pixels`] and plotters' layout use), for placing labels without guessing.
pub fn text_width(text: &str, size: f64) -> f64 {
    let scaled = font().as_scaled(PxScale::from(size as f32));
    let mut w = 0f32;
    let mut prev: Option<GlyphId> = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            w += scaled.kern(p, id);
        }
        w += scaled.h_advance(id);
        prev = Some(id);
    }
    f64::from(w)
}

/// The error type of plotters' bitmap backend (which [`Glyphs`] draws everything but text with).
type BitmapError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

/// A bitmap backend over an RGB pixel buffer whose text keeps each glyph's side bearings. Lines,
/// rectangles, polygons and pixels are drawn by plotters' own bitmap backend, made over the
/// same buffer for each call (it holds nothing else: a buffer and its size); text is blended
/// straight into the buffer with that backend's arithmetic (below), without a call and a
/// `Result` per inked pixel.
pub struct Glyphs<'a> {
    /// The pixels, 3 bytes (R, G, B) each, row after row.
    pixels: &'a mut [u8],
    /// Width and height in pixels.
    size: (u32, u32),
}

impl<'a> Glyphs<'a> {
    /// A backend drawing into `pixels` (`size.0` x `size.1` RGB pixels). Panics when the buffer
    /// is too small, as `BitMapBackend::with_buffer` does.
    pub fn with_buffer(pixels: &'a mut [u8], size: (u32, u32)) -> Self {
        assert!(
            pixels.len() >= size.0 as usize * size.1 as usize * 3,
            "Wrong buffer size"
        );
        Glyphs { pixels, size }
    }

    /// plotters' bitmap backend over the same pixels.
    fn bitmap(&mut self) -> BitMapBackend<'_> {
        BitMapBackend::with_buffer(self.pixels, self.size)
    }

    /// Blends `rgb` at opacity `alpha` into the pixel at byte offset `at`, as plotters' bitmap
    /// backend does (`PixelFormat::draw_pixel` of plotters-bitmap 0.3.7): opaque from 255/256
    /// on, nothing at 0 or less, else each channel moves `floor(alpha * 256) / 256` of the way
    /// to the colour, rounding down.
    #[inline]
    fn blend(&mut self, at: usize, rgb: (u8, u8, u8), alpha: f64) {
        let px = &mut self.pixels[at..at + 3];
        if alpha >= 1.0 - 1.0 / 256.0 {
            px.copy_from_slice(&[rgb.0, rgb.1, rgb.2]);
            return;
        }
        if alpha <= 0.0 {
            return;
        }
        // `alpha * 256` is positive here: truncation is its floor (without a libm call).
        let a = (alpha * 256.0) as u64;
        for (old, new) in px.iter_mut().zip([rgb.0, rgb.1, rgb.2]) {
            if new > *old {
                *old += (u64::from(new - *old) * a / 256) as u8;
            } else {
                *old -= (u64::from(*old - new) * a / 256) as u8;
            }
        }
    }
}

impl DrawingBackend for Glyphs<'_> {
    type ErrorType = BitmapError;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        Ok(())
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        Ok(())
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.bitmap().draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.bitmap().draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.bitmap()
            .draw_rect(upper_left, bottom_right, style, fill)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.bitmap().blit_bitmap(pos, size, src)
    }

    /// plotters' layout (the box from `layout_box`, the anchor, the rotation), with the glyphs
    /// from [`glyph_pixels`].
    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.size;
        for &(x, y, cov) in cached_pixels(text, style.size()).iter() {
            let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                let alpha = color.alpha * f64::from(cov.clamp(0.0, 1.0));
                self.blend((y as usize * w as usize + x as usize) * 3, color.rgb, alpha);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::*;

    /// Starts of the inked column runs of `text` drawn black at 40 px on a white bitmap.
    fn ink_starts(text: &str, glyphs: bool) -> Vec<i32> {
        super::super::font::register();
        let (w, h) = (400u32, 60u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        {
            let style = TextStyle::from((super::super::font::FAMILY, 40).into_font()).color(&BLACK);
            if glyphs {
                let mut b = Glyphs::with_buffer(&mut buf, (w, h));
                b.draw_text(text, &style, (10, 10)).unwrap();
                b.present().unwrap();
            } else {
                let mut b = BitMapBackend::with_buffer(&mut buf, (w, h));
                b.draw_text(text, &style, (10, 10)).unwrap();
                b.present().unwrap();
            }
        }
        let inked = |x: u32| (0..h).any(|y| buf[((y * w + x) * 3) as usize] < 128);
        (0..w)
            .filter(|&x| inked(x) && (x == 0 || !inked(x - 1)))
            .map(|x| x as i32)
            .collect()
    }

    /// Where each glyph's ink should start: pen (advances and kerning) plus the left side
    /// bearing, both read from the font's metrics tables, not from a rasterised outline.
    fn expected_starts(text: &str) -> Vec<f32> {
        let scaled = font().as_scaled(PxScale::from(40.0));
        let mut caret = 0f32;
        let mut prev = None;
        let mut out = Vec::new();
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                caret += scaled.kern(p, id);
            }
            out.push(10.0 + caret + scaled.h_side_bearing(id));
            caret += scaled.h_advance(id);
            prev = Some(id);
        }
        out
    }

    #[test]
    fn each_glyph_starts_at_its_pen_position_plus_its_bearing() {
        // "$0.9173": seven glyphs, none touching at 40 px, so seven ink runs.
        let text = "$0.9173";
        let got = ink_starts(text, true);
        let want = expected_starts(text);
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (*g as f32 - w).abs() <= 1.0,
                "ink at {got:?}, metrics say {want:?}"
            );
        }
        // plotters' own path drops the bearing: the `1` (bearing about 4.4 px at 40 px) starts
        // too far left there. This documents the bug the wrapper exists for.
        let plain = ink_starts(text, false);
        let one = text.find('1').unwrap();
        assert!(
            (plain[one] as f32 - want[one]).abs() > 2.0,
            "plotters now keeps bearings: {plain:?} vs {want:?}"
        );
    }

    #[test]
    fn cached_text_draws_the_pixels_of_a_fresh_rasterisation() {
        super::super::font::register();
        let (w, h) = (300u32, 80u32);
        let red = RGBColor(214, 39, 40).mix(0.9);
        let style = TextStyle::from((super::super::font::FAMILY, 21).into_font()).color(&red);
        let text = "toolset-swap: $0.9173";
        // Fresh: every pixel of the glyph boxes, covered or not, straight from ab_glyph.
        let mut fresh = vec![255u8; (w * h * 3) as usize];
        {
            let mut b = BitMapBackend::with_buffer(&mut fresh, (w, h));
            let ((min_x, min_y), _) = style.layout_box(text).unwrap();
            glyph_pixels(text, 21.0, |x, y, cov| {
                let c = BackendColor {
                    alpha: 0.9 * f64::from(cov.clamp(0.0, 1.0)),
                    rgb: (214, 39, 40),
                };
                b.draw_pixel((7 + x - min_x, 9 + y - min_y), c).unwrap();
            });
        }
        // Through the backend twice: the second call takes the cached pixels.
        for _ in 0..2 {
            let mut cached = vec![255u8; (w * h * 3) as usize];
            {
                let mut b = Glyphs::with_buffer(&mut cached, (w, h));
                b.draw_text(text, &style, (7, 9)).unwrap();
            }
            assert!(cached == fresh);
        }
        assert!(fresh.iter().any(|&b| b != 255));
    }
}
