//! The shared layout of per-request charts: one line per strategy, cache breaks marked with their
//! reason, and the mode timeline from the reference machine's trace underneath, so a break lines
//! up with the mode switch that caused it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::{self, Break, Group, Phase, Timeline};
use super::style::{err, legend, phase_color, series_color, text, Draw, LEGEND};

/// Pixel height of the timeline strip.
const STRIP: u32 = 130;
const LEFT: u32 = 90;

/// One strategy's values, one per request.
pub struct Line {
    pub name: String,
    pub values: Vec<f64>,
    pub breaks: Vec<Break>,
}

/// A per-request chart ready to draw.
pub struct PerRequest {
    pub title: String,
    pub y_desc: String,
    pub y_format: fn(f64) -> String,
    pub y_max: f64,
    pub lines: Vec<Line>,
    pub timeline: Timeline,
}

impl PerRequest {
    /// Lines from a group, `value` picking each request's value from its row.
    pub fn from_group(
        group: &Group<'_>,
        title: &str,
        y_desc: &str,
        y_format: fn(f64) -> String,
        values: impl Fn(&[crate::metrics::RequestRow]) -> Vec<f64>,
        y_floor_max: f64,
    ) -> Self {
        let lines: Vec<Line> = group
            .replays
            .iter()
            .map(|r| Line {
                name: r.strategy.clone(),
                values: values(&r.rows),
                breaks: data::breaks(&r.rows),
            })
            .collect();
        let top = lines
            .iter()
            .flat_map(|l| l.values.iter().copied())
            .fold(y_floor_max, f64::max);
        let timeline = group
            .replays
            .first()
            .map(|r| data::timeline(&r.rows, &r.trace))
            .unwrap_or(Timeline {
                phases: Vec::new(),
                streams: Vec::new(),
                events: Vec::new(),
            });
        // Headroom for break labels stacked above the highest point.
        let mut per_request = std::collections::BTreeMap::<usize, usize>::new();
        for l in &lines {
            for b in &l.breaks {
                *per_request.entry(b.request).or_default() += 1;
            }
        }
        let stack = per_request.values().copied().max().unwrap_or(0) as f64;
        PerRequest {
            title: format!("{title} - {} ({} cache)", group.scenario, group.cache),
            y_desc: y_desc.to_string(),
            y_format,
            y_max: top * (1.08 + 0.06 * stack),
            lines,
            timeline,
        }
    }
}

impl Draw for PerRequest {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(&self.title, text(24)).map_err(err)?;
        let (w, h) = root.dim_in_pixel();
        let (top, strip) = root.split_vertically(h - STRIP);
        let (top, legend_area) = top.split_horizontally(w - LEGEND);
        let (strip, _) = strip.split_horizontally(w - LEGEND);
        let n = self.timeline.phases.len().max(1);
        let x_range = 0.5f64..(n as f64 + 0.5);
        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .margin_right(8)
            .x_label_area_size(48)
            .y_label_area_size(LEFT)
            .build_cartesian_2d(x_range.clone(), 0f64..self.y_max.max(1e-9))
            .map_err(err)?;
        let y_format = self.y_format;
        chart
            .configure_mesh()
            .x_desc("request")
            .y_desc(&self.y_desc)
            .x_labels(n.min(25))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 {
                    format!("{}", x.round() as i64)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| y_format(*y))
            .label_style(text(16))
            .axis_desc_style(text(17))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        // Event lines, so a break can be read against the decision that preceded it.
        for e in &self.timeline.events {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(e.x, 0.0), (e.x, self.y_max)],
                    RGBColor(170, 170, 170).stroke_width(1),
                )))
                .map_err(err)?;
        }
        // Labels of breaks at the same request stack upwards, in strategy order.
        let mut stacked: Vec<(usize, usize)> = Vec::new();
        let right_half = n as f64 / 2.0 + 0.5;
        for (i, line) in self.lines.iter().enumerate() {
            let color = series_color(i);
            let points: Vec<(f64, f64)> = line
                .values
                .iter()
                .enumerate()
                .map(|(k, v)| ((k + 1) as f64, *v))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(3)))
                .map_err(err)?;
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))
                .map_err(err)?;
            // Breaks: a cross on the point and the reason above it, stacked per strategy.
            for b in &line.breaks {
                let Some(v) = line.values.get(b.request - 1) else {
                    continue;
                };
                let at = (b.request as f64, *v);
                chart
                    .draw_series(std::iter::once(Cross::new(at, 9, color.stroke_width(3))))
                    .map_err(err)?;
                let rank = stacked.iter().filter(|(r, _)| *r == b.request).count();
                stacked.push((b.request, i));
                let dy = -14 - 18 * rank as i32;
                // Right of the point in the left half, left of it in the right half, so labels
                // stay inside the plot.
                let (dx, hpos) = if at.0 > right_half {
                    (-8, plotters::style::text_anchor::HPos::Right)
                } else {
                    (8, plotters::style::text_anchor::HPos::Left)
                };
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at(at)
                            + Text::new(
                                format!("{}: {}", line.name, b.short),
                                (dx, dy),
                                text(14)
                                    .color(&color)
                                    .pos(plotters::style::text_anchor::Pos::new(
                                        hpos,
                                        plotters::style::text_anchor::VPos::Bottom,
                                    )),
                            ),
                    ))
                    .map_err(err)?;
            }
        }
        let entries: Vec<(String, RGBColor, bool)> = self
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), series_color(i), false))
            .collect();
        legend(&legend_area, &entries)?;
        self.draw_strip(&strip, x_range)
    }
}

impl PerRequest {
    fn draw_strip<DB: DrawingBackend>(
        &self,
        strip: &DrawingArea<DB, Shift>,
        x_range: std::ops::Range<f64>,
    ) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let mut chart = ChartBuilder::on(strip)
            .margin(12)
            .margin_top(0)
            .margin_right(8)
            .y_label_area_size(LEFT)
            .build_cartesian_2d(x_range, 0f64..1f64)
            .map_err(err)?;
        // Runs of requests in the same phase and stream, labelled once; subagent runs are
        // darker and named after their stream.
        let phases = &self.timeline.phases;
        let stream = |i: usize| {
            self.timeline
                .streams
                .get(i)
                .map(String::as_str)
                .unwrap_or("main")
        };
        let mut start = 0;
        while start < phases.len() {
            let p = phases[start];
            let mut end = start;
            while end + 1 < phases.len() && phases[end + 1] == p && stream(end + 1) == stream(start)
            {
                end += 1;
            }
            let (x0, x1) = (start as f64 + 0.5, end as f64 + 1.5);
            let sub = stream(start) != "main";
            let color = if sub {
                let RGBColor(r, g, b) = phase_color(p);
                RGBColor(r / 4 * 3, g / 4 * 3, b / 4 * 3)
            } else {
                phase_color(p)
            };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.55), (x1, 1.0)],
                    color.filled(),
                )))
                .map_err(err)?;
            let label = if sub {
                stream(start).to_string()
            } else {
                label_for(p, end - start + 1)
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    ((x0 + x1) / 2.0, 0.9),
                    text(15).pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    )),
                )))
                .map_err(err)?;
            start = end + 1;
        }
        // Events at the same position share one line, their labels stacked under it; lone
        // events alternate between the two rows so neighbours do not collide.
        let mut groups: Vec<(f64, Vec<String>)> = Vec::new();
        for e in &self.timeline.events {
            match groups.last_mut() {
                Some((x, labels)) if (*x - e.x).abs() < 1e-9 => {
                    // Two rows: a third label joins the second.
                    if labels.len() == 2 {
                        labels[1] = format!("{}, {}", labels[1], e.label);
                    } else {
                        labels.push(e.label.clone());
                    }
                }
                _ => groups.push((e.x, vec![e.label.clone()])),
            }
        }
        let rows = [0.42, 0.18];
        let mut next_row = 0;
        for (x, labels) in &groups {
            let first = if labels.len() > 1 { 0 } else { next_row };
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(*x, rows[first] + 0.05), (*x, 1.0)],
                    BLACK.stroke_width(2),
                )))
                .map_err(err)?;
            for (k, label) in labels.iter().enumerate() {
                let Some(y) = rows.get(first + k) else {
                    break;
                };
                chart
                    .draw_series(std::iter::once(Text::new(
                        label.clone(),
                        (*x, *y),
                        text(14).pos(plotters::style::text_anchor::Pos::new(
                            plotters::style::text_anchor::HPos::Center,
                            plotters::style::text_anchor::VPos::Top,
                        )),
                    )))
                    .map_err(err)?;
            }
            next_row = if labels.len() > 1 { 0 } else { 1 - next_row };
        }
        strip
            .draw(&Text::new("mode", (14, 20), text(16)))
            .map_err(err)?;
        Ok(())
    }
}

/// The phase name, shortened when its span is too narrow for the full label.
fn label_for(p: Phase, requests: usize) -> String {
    let full = p.label();
    if requests >= 2 || full.len() <= 10 {
        full
    } else {
        match p {
            Phase::After(_) => "after".to_string(),
            _ => full.chars().take(8).collect(),
        }
    }
}
