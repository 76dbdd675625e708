//! Cost per session, one stacked bar per strategy: uncached input, cache writes (5 m / 1 h),
//! cache reads and output.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::{cost_split, CostSplit, Group};
use super::style::{err, legend, text, Draw, LEGEND};
use crate::cache::PriceTable;

const PART_COLORS: [RGBColor; 5] = [
    RGBColor(214, 39, 40),
    RGBColor(255, 152, 60),
    RGBColor(188, 128, 189),
    RGBColor(44, 160, 44),
    RGBColor(110, 110, 110),
];

pub struct CostChart {
    pub title: String,
    pub bars: Vec<(String, CostSplit)>,
}

pub fn chart(group: &Group<'_>, prices: &PriceTable) -> Result<CostChart, String> {
    let bars = group
        .replays
        .iter()
        .map(|r| Ok((r.strategy.clone(), cost_split(&r.rows, prices)?)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(CostChart {
        title: format!(
            "Cost per session - {} ({} cache)",
            group.scenario, group.cache
        ),
        bars,
    })
}

impl Draw for CostChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
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
        let names: Vec<String> = self.bars.iter().map(|(n, _)| n.clone()).collect();
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .margin_right(8)
            .x_label_area_size(48)
            .y_label_area_size(90)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top * 1.3)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc("USD per session")
            .y_label_formatter(&|y| format!("${y:.3}"))
            // Enough ticks that every integer (bar centre) gets one; only those are named.
            .x_labels(2 * n + 2)
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 && *x >= 0.0 {
                    names.get(x.round() as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_style(text(if n > 5 { 13 } else { 16 }))
            .y_label_style(text(16))
            .axis_desc_style(text(17))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        for p in 0..CostSplit::PARTS.len() {
            let color = PART_COLORS[p];
            let rects: Vec<Rectangle<(f64, f64)>> = self
                .bars
                .iter()
                .enumerate()
                .map(|(i, (_, s))| {
                    let parts = s.parts();
                    let y0: f64 = parts[..p].iter().sum();
                    let x = i as f64;
                    Rectangle::new([(x - 0.3, y0), (x + 0.3, y0 + parts[p])], color.filled())
                })
                .collect();
            chart.draw_series(rects).map_err(err)?;
        }
        // Totals above the bars.
        for (i, (_, s)) in self.bars.iter().enumerate() {
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("${:.4}", s.total()),
                    (i as f64, s.total() + top * 0.03),
                    text(if n > 5 { 14 } else { 17 }).pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Bottom,
                    )),
                )))
                .map_err(err)?;
        }
        // Top part of the stack first, as it reads on the bars.
        let entries: Vec<(String, RGBColor, bool)> = CostSplit::PARTS
            .iter()
            .zip(PART_COLORS)
            .rev()
            .map(|(n, c)| (n.to_string(), c, true))
            .collect();
        legend(&legend_area, &entries)
    }
}
