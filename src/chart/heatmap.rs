//! The break-even heatmap of a sweep: over two generator parameters, how much strategy A beats
//! (green) or loses to (red) strategy B, with the break-even boundary drawn between cells whose
//! winner differs.

use super::ChartError;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{err, text, Draw};
use crate::sweep::{metric_column, show, Sweep};

/// One heatmap: a facet of the grid where every axis but x, y and strategy is fixed.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// The chart's heading.
    pub title: String,
    /// The fixed values of the other axes, e.g. `cache=anthropic, review_wait=3m`.
    pub facet: String,
    /// Strategy A: positive cells are where A does better.
    pub a: String,
    /// Strategy B, the one A is compared with.
    pub b: String,
    /// The compared sweep column (`cost`, `hit_rate`, ...).
    pub metric: String,
    /// The sweep axis along x.
    pub x_name: String,
    /// The sweep axis along y.
    pub y_name: String,
    /// The x axis values, left to right.
    pub x_labels: Vec<String>,
    /// The y axis values, bottom to top.
    pub y_labels: Vec<String>,
    /// `cells[y][x]`: A's advantage over B in percent of B's value (positive: A better); None
    /// when a point is missing.
    pub cells: Vec<Vec<Option<f64>>>,
}

impl Heatmap {
    /// The cells: coloured by the value, with it written where it fits (white on dark cells).
    fn draw_cells<DB: DrawingBackend>(
        &self,
        chart: &mut Grid<'_, DB>,
        scale: f64,
        (cell_w, cell_h): (f64, f64),
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let centered = Pos::new(HPos::Center, VPos::Center);
        for (yk, row) in self.cells.iter().enumerate() {
            for (xk, cell) in row.iter().enumerate() {
                let (x, y) = (xk as f64, yk as f64);
                let (fill, label) = match cell {
                    Some(v) => (cell_color(*v, scale), format!("{v:+.1}%")),
                    None => (RGBColor(255, 255, 255), "n/a".to_string()),
                };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                        fill.filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                        WHITE.stroke_width(1),
                    )))
                    .map_err(err)?;
                // Values only where they fit; the colour bar reads the rest. Dark cells get
                // white text.
                if let Some(size) = cell_font(&label, cell_w, cell_h) {
                    let dark = cell.is_some_and(|v| v.abs() > scale * 0.6);
                    let color = if dark { WHITE } else { BLACK };
                    chart
                        .draw_series(std::iter::once(Text::new(
                            label,
                            (x, y),
                            text(size).color(&color).pos(centered),
                        )))
                        .map_err(err)?;
                }
            }
        }
        Ok(())
    }

    /// The break-even boundary: a line between neighbours whose winner differs.
    fn draw_break_even<DB: DrawingBackend>(
        &self,
        chart: &mut Grid<'_, DB>,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let sign = |v: &Option<f64>| v.map(|v| (v > 0.0) as i8 - (v < 0.0) as i8);
        let line = BLACK.stroke_width(4);
        for (yk, row) in self.cells.iter().enumerate() {
            for (xk, cell) in row.iter().enumerate() {
                let (x, y) = (xk as f64, yk as f64);
                if let Some(right) = row.get(xk + 1) {
                    if sign(cell).is_some() && sign(right).is_some() && sign(cell) != sign(right) {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(x + 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                                line,
                            )))
                            .map_err(err)?;
                    }
                }
                if let Some(up) = self.cells.get(yk + 1).map(|r| &r[xk]) {
                    if sign(cell).is_some() && sign(up).is_some() && sign(cell) != sign(up) {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(x - 0.5, y + 0.5), (x + 0.5, y + 0.5)],
                                line,
                            )))
                            .map_err(err)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Cells where A is strictly better.
    pub fn a_wins(&self) -> usize {
        self.cells
            .iter()
            .flatten()
            .filter(|c| c.is_some_and(|v| v > 0.0))
            .count()
    }
}

/// The heatmaps of a sweep's rows, one per combination of the axes other than x, y and strategy.
pub fn heatmaps(
    sweep: &Sweep,
    header: &[String],
    rows: &[Vec<String>],
) -> Result<Vec<Heatmap>, ChartError> {
    let Some(c) = &sweep.compare else {
        return Ok(Vec::new());
    };
    let (metric_col, higher_better) =
        metric_column(&c.metric).ok_or_else(|| ChartError::UnknownMetric(c.metric.clone()))?;
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| ChartError::NoColumn(name.to_string()))
    };
    let (xi, yi, si, mi) = (col(&c.x)?, col(&c.y)?, col("strategy")?, col(metric_col)?);
    let axis_labels = |name: &str| -> Vec<String> {
        sweep
            .axes
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.values.iter().map(show).collect())
            .unwrap_or_default()
    };
    let (xs, ys) = (axis_labels(&c.x), axis_labels(&c.y));
    // Facet columns: generator axes other than x and y, plus the cache model.
    let mut facet_cols = Vec::new();
    for a in &sweep.axes {
        if a.name == c.x || a.name == c.y || a.name == "strategy" {
            continue;
        }
        facet_cols.push((a.name.clone(), col(&a.name)?));
    }
    let facet_of = |r: &Vec<String>| -> String {
        facet_cols
            .iter()
            .map(|(n, i)| format!("{n}={}", r[*i]))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut facets: Vec<String> = Vec::new();
    for r in rows {
        let f = facet_of(r);
        if !facets.contains(&f) {
            facets.push(f);
        }
    }
    let value = |r: &Vec<String>| -> Result<f64, ChartError> {
        r[mi].parse::<f64>().map_err(|_| ChartError::NotNumber {
            point: r[0].clone(),
            column: metric_col.to_string(),
            value: r[mi].clone(),
        })
    };
    let mut out = Vec::new();
    for facet in facets {
        let mut cells = vec![vec![None; xs.len()]; ys.len()];
        for (yk, yv) in ys.iter().enumerate() {
            for (xk, xv) in xs.iter().enumerate() {
                let find = |s: &str| {
                    rows.iter().find(|r| {
                        r[xi] == *xv && r[yi] == *yv && r[si] == s && facet_of(r) == facet
                    })
                };
                if let (Some(ra), Some(rb)) = (find(&c.a), find(&c.b)) {
                    let (va, vb) = (value(ra)?, value(rb)?);
                    let diff = if higher_better { va - vb } else { vb - va };
                    cells[yk][xk] = Some(if vb.abs() > 0.0 {
                        diff / vb.abs() * 100.0
                    } else {
                        0.0
                    });
                }
            }
        }
        out.push(Heatmap {
            title: format!("Where {} beats {} ({})", c.a, c.b, c.metric),
            facet,
            a: c.a.clone(),
            b: c.b.clone(),
            metric: c.metric.clone(),
            x_name: c.x.clone(),
            y_name: c.y.clone(),
            x_labels: xs.clone(),
            y_labels: ys.clone(),
            cells,
        });
    }
    Ok(out)
}

/// Green for A better, red for B better, paler towards zero.
fn cell_color(v: f64, scale: f64) -> RGBColor {
    let t = (v.abs() / scale.max(1e-9)).clamp(0.0, 1.0);
    let mix = |full: u8| (255.0 + (full as f64 - 255.0) * (0.15 + 0.85 * t)).round() as u8;
    if v > 0.0 {
        RGBColor(mix(49), mix(163), mix(84))
    } else if v < 0.0 {
        RGBColor(mix(222), mix(45), mix(38))
    } else {
        RGBColor(240, 240, 240)
    }
}

/// Pixel width of the colour bar column right of the map.
const COLOR_BAR: u32 = 150;

/// Every `k`-th label of an axis so `count` labels of `widest` px fit in `room` px.
fn label_step(count: usize, widest: f64, room: f64) -> usize {
    let fit = (room / (widest + 10.0)).floor().max(1.0) as usize;
    count.div_ceil(fit).max(1)
}

/// The largest font size (of 16, 13, 11) at which `label` fits a cell, if any.
fn cell_font(label: &str, cell_w: f64, cell_h: f64) -> Option<u32> {
    [16u32, 13, 11].into_iter().find(|&size| {
        label.chars().count() as f64 * size as f64 * 0.6 + 4.0 <= cell_w
            && size as f64 + 2.0 <= cell_h
    })
}

/// The two footer lines under a heatmap. The cell is an advantage, so a positive cell favours
/// A whatever the metric; the metric's own direction is said in words ("lower cost").
pub fn caption_lines(a: &str, b: &str, metric: &str) -> [String; 2] {
    let higher = crate::sweep::metric_column(metric).is_some_and(|(_, h)| h);
    let good = if higher {
        format!("higher {metric}")
    } else {
        format!("lower {metric}")
    };
    [
        format!(
            "cell: {a}'s advantage over {b} in % of {b}'s {metric} (positive: {a} has the {good})"
        ),
        format!("green: {a} wins, red: {b} wins, black line: break-even"),
    ]
}

/// The heatmap's plot: grid positions on both axes.
type Grid<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

impl Draw for Heatmap {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let (nx, ny) = (self.x_labels.len().max(1), self.y_labels.len().max(1));
        let caption = if self.facet.is_empty() {
            self.title.clone()
        } else {
            format!("{} - {}", self.title, self.facet)
        };
        let (w, h) = root.dim_in_pixel();
        let (footer_h, caption_h) = (44u32, 34u32);
        let (body, footer) = root.split_vertically(h - footer_h);
        let (map_area, bar_area) = body.split_horizontally(w - COLOR_BAR);
        let (xl, yl) = (self.x_labels.clone(), self.y_labels.clone());
        let y_label_w = 90u32;
        let x_label_h = 52u32;
        let plot_w = (w - COLOR_BAR) as f64 - 14.0 - 12.0 - y_label_w as f64;
        let plot_h = (h - footer_h) as f64 - caption_h as f64 - 14.0 - x_label_h as f64 - 6.0;
        let widest = |labels: &[String]| {
            labels.iter().map(|l| l.chars().count()).max().unwrap_or(1) as f64 * 16.0 * 0.6
        };
        let x_step = label_step(nx, widest(&xl), plot_w);
        let y_step = label_step(ny, 16.0, plot_h);
        let mut chart = ChartBuilder::on(&map_area)
            .caption(caption, text(22))
            .margin(14)
            .margin_right(12)
            .margin_bottom(6)
            .x_label_area_size(x_label_h)
            .y_label_area_size(y_label_w)
            .build_cartesian_2d(-0.5f64..(nx as f64 - 0.5), -0.5f64..(ny as f64 - 0.5))
            .map_err(err)?;
        let pick = |labels: &[String], v: f64, step: usize| {
            if (v - v.round()).abs() < 1e-6 && v >= -1e-6 && (v.round() as usize) % step == 0 {
                labels.get(v.round() as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(&self.x_name)
            .y_desc(&self.y_name)
            // As many key points as cells: plotters' round-number steps over a range n cells
            // wide then fall on the cell centres (step 1), never on the edges (step 0.5 would
            // need 2n + 1), so every tick mark is at a cell's centre.
            .x_labels(nx)
            .y_labels(ny)
            .x_label_formatter(&|v| pick(&xl, *v, x_step))
            .y_label_formatter(&|v| pick(&yl, *v, y_step))
            .label_style(text(16))
            .axis_desc_style(text(17))
            .draw()
            .map_err(err)?;
        let scale = self
            .cells
            .iter()
            .flatten()
            .flatten()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        self.draw_cells(&mut chart, scale, (plot_w / nx as f64, plot_h / ny as f64))?;
        self.draw_break_even(&mut chart)?;
        let caption = caption_lines(&self.a, &self.b, &self.metric);
        self.draw_color_bar(&bar_area, scale, caption_h)?;
        let (fw, _) = footer.dim_in_pixel();
        for (k, line) in caption.into_iter().enumerate() {
            footer
                .draw(&Text::new(
                    line,
                    (fw as i32 / 2, 12 + 18 * k as i32),
                    text(14).pos(Pos::new(HPos::Center, VPos::Center)),
                ))
                .map_err(err)?;
        }
        Ok(())
    }
}

impl Heatmap {
    /// A vertical colour bar from B's largest win (bottom, red) to A's (top, green).
    fn draw_color_bar<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        scale: f64,
        top: u32,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let (_, h) = area.dim_in_pixel();
        let (y0, y1) = (top as i32 + 40, h as i32 - 50);
        let (x0, x1) = (12, 34);
        let steps = 60;
        for k in 0..steps {
            // k = 0 at the top (+scale).
            let v = scale * (1.0 - 2.0 * (k as f64 + 0.5) / steps as f64);
            let ya = y0 + (y1 - y0) * k / steps;
            let yb = y0 + (y1 - y0) * (k + 1) / steps;
            area.draw(&Rectangle::new(
                [(x0, ya), (x1, yb + 1)],
                cell_color(v, scale).filled(),
            ))
            .map_err(err)?;
        }
        area.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.stroke_width(1)))
            .map_err(err)?;
        let label_at = |v: f64| y0 + ((y1 - y0) as f64 * (1.0 - v / scale.max(1e-9)) / 2.0) as i32;
        let left = Pos::new(HPos::Left, VPos::Center);
        for v in [scale, scale / 2.0, 0.0, -scale / 2.0, -scale] {
            let y = label_at(v);
            area.draw(&PathElement::new(
                vec![(x1, y), (x1 + 5, y)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?;
            area.draw(&Text::new(
                if v == 0.0 {
                    "0%".to_string()
                } else {
                    format!("{v:+.1}%")
                },
                (x1 + 8, y),
                text(13).pos(left),
            ))
            .map_err(err)?;
        }
        for (k, line) in [self.a.as_str(), "better"].into_iter().enumerate() {
            area.draw(&Text::new(
                line.to_string(),
                (x0, y0 - 30 + 14 * k as i32),
                text(12).pos(left),
            ))
            .map_err(err)?;
        }
        for (k, line) in [self.b.as_str(), "better"].into_iter().enumerate() {
            area.draw(&Text::new(
                line.to_string(),
                (x0, y1 + 14 + 14 * k as i32),
                text(12).pos(left),
            ))
            .map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod caption_tests {
    #[test]
    fn the_caption_says_which_sign_wins_not_lower_is_better() {
        let [cell, _] = super::caption_lines("history-reset", "permission-mode", "cost");
        assert_eq!(
            cell,
            "cell: history-reset's advantage over permission-mode in % of permission-mode's cost \
             (positive: history-reset has the lower cost)"
        );
        let [hit, _] = super::caption_lines("a", "b", "hit-rate");
        assert!(
            hit.ends_with("(positive: a has the higher hit-rate)"),
            "{hit}"
        );
        assert!(!cell.contains("is better") && !hit.contains("is better"));
    }
}
