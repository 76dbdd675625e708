//! Cost per session, one stacked bar per strategy: uncached input, cache writes (5 m / 1 h
//! under Anthropic, one class elsewhere), cache reads, output and explicit cache storage.

use super::ChartError;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::{cost_split, CostSplit, Group};
use super::style::{err, legend, text, Draw, LEGEND};
use crate::cache::PriceTable;

/// The colour of each part, in [`CostSplit::parts`] order: uncached input (charcoal), cache
/// writes 5 m (sand) and 1 h (tan), cache reads (pale sage), output (slate lavender), cache
/// storage (pale yellow). Muted on purpose: the saturated colours mean strategies in every other
/// chart, so no part may look like one (tested: CIE76 distance of at least 20 from every
/// strategy colour).
pub const PART_COLORS: [RGBColor; CostSplit::N] = [
    RGBColor(50, 50, 50),
    RGBColor(222, 196, 140),
    RGBColor(180, 150, 110),
    RGBColor(200, 225, 215),
    RGBColor(135, 120, 165),
    RGBColor(255, 240, 160),
];

/// Outline of every bar part (pale parts stay visible on the white ground).
const PART_EDGE: RGBColor = RGBColor(90, 90, 90);

/// The cost chart of one scenario and cache model: one stacked bar per strategy.
pub struct CostChart {
    /// The chart's heading (`Cost per session - SCENARIO (CACHE cache)`).
    pub title: String,
    /// Each strategy's name and its session cost split the way it is billed, in run order.
    pub bars: Vec<(String, CostSplit)>,
}

/// The cost chart of `group`, priced with `prices`; fails when a model has no price.
pub fn chart(group: &Group<'_>, prices: &PriceTable) -> Result<CostChart, ChartError> {
    let bars = group
        .replays
        .iter()
        .map(|r| Ok((r.strategy.clone(), cost_split(&r.rows, prices)?)))
        .collect::<Result<Vec<_>, ChartError>>()?;
    Ok(CostChart {
        title: format!(
            "Cost per session - {} ({} cache)",
            group.scenario, group.cache
        ),
        bars,
    })
}

/// Parts of the split that are non-zero for at least one bar (all-zero parts get no legend
/// entry: a cache model without 1-hour writes shows no "cache writes 1h").
pub fn parts_used(bars: &[(String, CostSplit)]) -> Vec<usize> {
    (0..CostSplit::N)
        .filter(|&p| bars.iter().any(|(_, s)| s.parts()[p] > 0.0))
        .collect()
}

impl CostChart {
    /// The stacked bars: each cost part in its colour, outlined, strategy `i` at row `i`.
    fn draw_parts<DB: DrawingBackend>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        n: usize,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let thickness = if n > 12 { 0.38 } else { 0.3 };
        for p in 0..CostSplit::N {
            let color = PART_COLORS[p];
            let rects: Vec<Rectangle<(f64, f64)>> = self
                .bars
                .iter()
                .enumerate()
                .map(|(i, (_, s))| {
                    let parts = s.parts();
                    let x0: f64 = parts[..p].iter().sum();
                    let y = i as f64;
                    [(x0, y - thickness), (x0 + parts[p], y + thickness)]
                })
                .filter(|r| r[1].0 > r[0].0)
                .flat_map(|r| {
                    [
                        Rectangle::new(r, color.filled()),
                        Rectangle::new(r, PART_EDGE.stroke_width(1)),
                    ]
                })
                .collect();
            chart.draw_series(rects).map_err(err)?;
        }
        Ok(())
    }
}

impl Draw for CostChart {
    /// Horizontal bars, one per strategy, names left-aligned on the left: names never collide
    /// however many strategies there are.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(&self.title, text(24)).map_err(err)?;
        let (w, _) = root.dim_in_pixel();
        let (plot, legend_area) = root.split_horizontally(w - LEGEND);
        let n = self.bars.len().max(1);
        let top = self
            .bars
            .iter()
            .map(|(_, s)| s.total())
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let name_size: u32 = if n > 12 { 13 } else { 16 };
        let name_width = self
            .bars
            .iter()
            .map(|(name, _)| name.chars().count() as f64 * name_size as f64 * 0.6)
            .fold(60.0f64, f64::max) as u32
            + 16;
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .margin_right(16)
            .x_label_area_size(48)
            .y_label_area_size(name_width)
            // Bar 0 on top.
            .build_cartesian_2d(0f64..top * 1.22, (n as f64 - 0.5)..-0.5f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("USD per session")
            .x_label_formatter(&|x| format!("${x:.3}"))
            .x_labels(6)
            .y_labels(0)
            .x_label_style(text(16))
            .axis_desc_style(text(17))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        self.draw_parts(&mut chart, n)?;
        let (plot_w, plot_h) = plot.dim_in_pixel();
        let _ = plot_w;
        let row_px = (plot_h as f64 - 12.0 - 48.0) / n as f64;
        for (i, (name, s)) in self.bars.iter().enumerate() {
            // Totals right of the bars.
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("${:.4}", s.total()),
                    (s.total() + top * 0.01, i as f64),
                    text(if n > 12 { 13 } else { 15 }).pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Left,
                        plotters::style::text_anchor::VPos::Center,
                    )),
                )))
                .map_err(err)?;
            // Names left-aligned in the label column.
            let y = 12.0 + row_px * (i as f64 + 0.5);
            plot.draw(&Text::new(
                name.clone(),
                (14, y as i32),
                text(name_size).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                )),
            ))
            .map_err(err)?;
        }
        // Parts in stacking order (left to right), only those this chart uses.
        let names = self
            .bars
            .first()
            .map_or(CostSplit::default().names(), |(_, s)| s.names());
        let entries: Vec<(String, RGBColor, bool)> = parts_used(&self.bars)
            .into_iter()
            .map(|p| (names[p].to_string(), PART_COLORS[p], true))
            .collect();
        legend(&legend_area, &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CIE L*a*b* of an sRGB colour (D65).
    fn lab(c: RGBColor) -> [f64; 3] {
        let lin = |u: u8| {
            let u = u as f64 / 255.0;
            if u > 0.04045 {
                ((u + 0.055) / 1.055).powf(2.4)
            } else {
                u / 12.92
            }
        };
        let (r, g, b) = (lin(c.0), lin(c.1), lin(c.2));
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        [
            116.0 * f(y) - 16.0,
            500.0 * (f(x) - f(y)),
            200.0 * (f(y) - f(z)),
        ]
    }

    fn distance(a: RGBColor, b: RGBColor) -> f64 {
        let (a, b) = (lab(a), lab(b));
        (0..3).map(|i| (a[i] - b[i]).powi(2)).sum::<f64>().sqrt()
    }

    #[test]
    fn no_cost_part_looks_like_a_strategy() {
        // Every registered strategy, and names outside the fixed palette (hash fallback).
        let mut names: Vec<String> = crate::strategy::names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        names.extend((0..64).map(|k| format!("my-strategy-{k}")));
        for (p, part) in PART_COLORS.iter().enumerate() {
            for n in &names {
                let d = distance(*part, super::super::style::strategy_color(n));
                assert!(d >= 20.0, "part {p} is {d:.1} from {n}'s colour");
            }
            for (q, other) in PART_COLORS.iter().enumerate().take(p) {
                let d = distance(*part, *other);
                assert!(d >= 15.0, "parts {q} and {p} are {d:.1} apart");
            }
        }
    }
}
