//! The cost-by-day chart: per day, plancache's predicted cost beside what was billed.

use crate::chart::ChartError;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::chart::font::FAMILY;
use crate::chart::Draw;

const PREDICTED: RGBColor = RGBColor(31, 119, 180);
const BILLED: RGBColor = RGBColor(150, 150, 150);

/// Days (`YYYY-MM-DD`) with their predicted and billed cost in dollars.
pub struct CostByDay {
    /// The chart's title.
    pub title: String,
    /// Per day, in order: (`YYYY-MM-DD`, predicted $, billed $).
    pub days: Vec<(String, f64, f64)>,
}

fn err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

fn text(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

impl Draw for CostByDay {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(&self.title, text(24)).map_err(err)?;
        let n = self.days.len().max(1);
        let top = self
            .days
            .iter()
            .map(|(_, p, b)| p.max(*b))
            .fold(0.0f64, f64::max)
            .max(1e-9);
        // At most ~16 day labels, evenly spaced.
        let step = n.div_ceil(16);
        let names: Vec<String> = self.days.iter().map(|(d, _, _)| d.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(70)
            .y_label_area_size(90)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top * 1.15)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc("USD per day")
            .y_label_formatter(&|y| format!("${y:.2}"))
            .x_labels(2 * n + 2)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) % step == 0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_style(text(13))
            .y_label_style(text(16))
            .axis_desc_style(text(17))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        let bar = |i: usize, v: f64, left: bool, color: RGBColor| {
            let x = i as f64;
            let (a, b) = if left { (x - 0.4, x) } else { (x, x + 0.4) };
            Rectangle::new([(a, 0.0), (b, v)], color.filled())
        };
        chart
            .draw_series(
                self.days
                    .iter()
                    .enumerate()
                    .map(|(i, (_, p, _))| bar(i, *p, true, PREDICTED)),
            )
            .map_err(err)?
            .label("predicted")
            .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], PREDICTED.filled()));
        chart
            .draw_series(
                self.days
                    .iter()
                    .enumerate()
                    .map(|(i, (_, _, b))| bar(i, *b, false, BILLED)),
            )
            .map_err(err)?
            .label("billed")
            .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], BILLED.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(text(16).pos(Pos::new(HPos::Left, VPos::Center)))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        Ok(())
    }
}
