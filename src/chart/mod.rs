//! Charts for design reviews and the report that puts them next to the numbers.
//!
//! Every chart is drawn with plotters to SVG and PNG using an embedded font ([`font`]), so it
//! renders the same on a headless machine with no system fonts. Per scenario and cache model:
//! hit rate, cumulative recomputed tokens and TTFT per request (with the mode timeline and the
//! cache breaks marked), and the cost of the session split the way it is billed.

pub mod cost;
pub mod data;
mod error;
pub mod font;
pub mod heatmap;
pub mod hit_rate;
pub mod machine;
mod per_request;
pub mod raster;
pub mod recomputed;
pub mod report;
mod style;
pub mod ttft;

use std::path::Path;

use crate::cache::PriceTable;
use crate::export::write_atomic;

pub use error::ChartError;
pub use style::{png, svg, Draw, SIZE};

/// One rendered chart: its file stem (inside `charts/`) and its SVG text.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// `auth-plan-ideal-hit-rate`: `.svg` and `.png` files carry this stem.
    pub stem: String,
    /// The chart's kind as the report names it (`Hit rate per request`).
    pub title: String,
    /// The SVG document, inlined by report.html.
    pub svg: String,
}

/// The charts of one group, in report order. With `dir`, writes `dir/STEM.svg` and `dir/STEM.png`.
pub fn render_group(
    group: &data::Group<'_>,
    prices: &PriceTable,
    dir: Option<&Path>,
) -> Result<Vec<Rendered>, ChartError> {
    let stem = group.stem();
    let mut out = Vec::new();
    let mut emit = |kind: &str,
                    title: &str,
                    svg_text: String,
                    png_fn: &dyn Fn(&Path) -> Result<(), ChartError>|
     -> Result<(), ChartError> {
        let name = format!("{stem}-{kind}");
        if let Some(dir) = dir {
            write_atomic(&dir.join(format!("{name}.svg")), svg_text.as_bytes())?;
            png_fn(&dir.join(format!("{name}.png")))?;
        }
        out.push(Rendered {
            stem: name,
            title: title.to_string(),
            svg: svg_text,
        });
        Ok(())
    };
    let hit = hit_rate::chart(group);
    emit("hit-rate", "Hit rate per request", svg(&hit)?, &|p| {
        png(&hit, p)
    })?;
    let rec = recomputed::chart(group);
    emit(
        "recomputed",
        "Cumulative recomputed tokens",
        svg(&rec)?,
        &|p| png(&rec, p),
    )?;
    let cost = cost::chart(group, prices)?;
    emit("cost", "Cost per session", svg(&cost)?, &|p| png(&cost, p))?;
    let t = ttft::chart(group);
    emit("ttft", "Estimated TTFT per request", svg(&t)?, &|p| {
        png(&t, p)
    })?;
    Ok(out)
}
