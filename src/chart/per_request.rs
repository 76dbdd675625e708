//! The shared layout of per-request charts: one line per strategy, cache breaks marked with their
//! reason, and the mode timeline from the reference machine's trace underneath, so a break lines
//! up with the mode switch that caused it.

use super::ChartError;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::{self, Break, Group, Phase, Timeline};
use super::style::{err, legend, legend_height, phase_color, strategy_color, text, Draw, LEGEND};

/// Pixel height of the timeline strip.
const STRIP: u32 = 130;
const LEFT: u32 = 90;

/// One strategy's values, one per request.
pub struct Line {
    /// The strategy's name: its legend entry and (through `strategy_color`) its colour.
    pub name: String,
    /// The chart's value at each request, in request order.
    pub values: Vec<f64>,
    /// The strategy's cache breaks, each marked with a cross and a label at its point.
    pub breaks: Vec<Break>,
    /// Requests (1-based) that are keep-alive pings, each marked with a triangle.
    pub pings: Vec<usize>,
}

/// A per-request chart ready to draw.
pub struct PerRequest {
    /// The chart's heading.
    pub title: String,
    /// The y axis title.
    pub y_desc: String,
    /// Formats a y tick value (`90%`, `20.0k`).
    pub y_format: fn(f64) -> String,
    /// The top of the y axis.
    pub y_max: f64,
    /// One line per strategy, in run order.
    pub lines: Vec<Line>,
    /// The mode timeline drawn under the plot.
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
                pings: r
                    .rows
                    .iter()
                    .filter(|x| x.kind == crate::metrics::RequestKind::Keepalive)
                    .map(|x| x.request)
                    .collect(),
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
        PerRequest {
            title: format!("{title} - {} ({} cache)", group.scenario, group.cache),
            y_desc: y_desc.to_string(),
            y_format,
            // Headroom above the highest point for the break labels placed above it.
            y_max: top * 1.12,
            lines,
            timeline,
        }
    }
}

/// Pixel height of a break label's box.
const LABEL_H: f64 = 17.0;
/// Approximate advance of one character of the embedded font at `size` px (DejaVu Sans
/// averages about 0.6 em on these labels), used to keep labels from colliding.
fn text_width(label: &str, size: u32) -> f64 {
    label.chars().count() as f64 * size as f64 * 0.6
}

/// Lines with identical values drawn once: (representative, every member).
pub fn coinciding(lines: &[Line]) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        // Identical values are one line on the chart whatever their breaks (each break still
        // gets its cross and label).
        let same = |j: usize| lines[j].values == l.values;
        match out.iter_mut().find(|(rep, _)| same(*rep)) {
            Some((_, members)) => members.push(i),
            None => out.push((i, vec![i])),
        }
    }
    out
}

/// Share of the y axis within which two lines count as near-identical: at every request they
/// lie closer than this, so the one drawn last covers the other almost everywhere.
pub const NEAR: f64 = 0.015;

/// For each drawn line (an entry of [`coinciding`]), the earlier drawn line it runs along
/// everywhere without being identical (within `NEAR * y_max` at every request), if any.
pub fn near_identical(
    lines: &[Line],
    groups: &[(usize, Vec<usize>)],
    y_max: f64,
) -> Vec<Option<usize>> {
    let tol = NEAR * y_max;
    groups
        .iter()
        .enumerate()
        .map(|(k, (rep, _))| {
            let v = &lines[*rep].values;
            groups[..k].iter().map(|(r, _)| *r).find(|&j| {
                let w = &lines[j].values;
                w.len() == v.len() && w.iter().zip(v).all(|(a, b)| (a - b).abs() <= tol)
            })
        })
        .collect()
}

/// One break label, drawn next to its break: the breaks of one kind, by one or several
/// strategies.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakLabel {
    pub text: String,
    /// Requests it points at (the first one anchors the label).
    pub requests: Vec<usize>,
    /// Colour index of its only strategy, or None when several share it.
    pub series: Option<usize>,
    /// Indices of the strategies it speaks for (its anchor is the highest of their points).
    pub who: Vec<usize>,
}

/// Merges the breaks of all lines into labels: strategies breaking at the same request for the
/// same reason share one label ("all 4 strategies: tools changed"), and one strategy's
/// breaks of one kind share one label with their requests listed.
pub fn break_labels(lines: &[Line]) -> Vec<BreakLabel> {
    use std::collections::BTreeMap;
    // (request, short) -> strategies
    let mut at: BTreeMap<(usize, String), Vec<usize>> = BTreeMap::new();
    for (i, l) in lines.iter().enumerate() {
        for b in &l.breaks {
            at.entry((b.request, b.short.clone())).or_default().push(i);
        }
    }
    // (who, short) -> requests
    let mut merged: Vec<(Vec<usize>, String, Vec<usize>)> = Vec::new();
    for ((request, short), who) in at {
        match merged.iter_mut().find(|(w, s, _)| *w == who && *s == short) {
            Some((_, _, reqs)) => reqs.push(request),
            None => merged.push((who, short, vec![request])),
        }
    }
    let n = lines.len();
    let mut out: Vec<BreakLabel> = merged
        .into_iter()
        .flat_map(|(who, short, requests)| {
            let names: Vec<&str> = who.iter().map(|&i| lines[i].name.as_str()).collect();
            let who_text = if who.len() == 1 {
                names[0].to_string()
            } else if who.len() == n {
                format!("all {n} strategies")
            } else if names.join(", ").len() <= 34 {
                names.join(", ")
            } else {
                format!("{} strategies", who.len())
            };
            let series = (who.len() == 1).then(|| who[0]);
            // One or two breaks: one label at each (the position says which request). Three
            // or more: one label at the first, naming the span (a cross still marks each).
            if requests.len() <= 2 {
                requests
                    .iter()
                    .map(|r| BreakLabel {
                        text: format!("{who_text}: {short}"),
                        requests: vec![*r],
                        series,
                        who: who.clone(),
                    })
                    .collect::<Vec<_>>()
            } else {
                vec![BreakLabel {
                    text: format!(
                        "{who_text}: {short} ({} .. {}, {} requests)",
                        requests[0],
                        requests[requests.len() - 1],
                        requests.len()
                    ),
                    requests,
                    series,
                    who: who.clone(),
                }]
            }
        })
        .collect();
    out.sort_by_key(|l| l.requests[0]);
    out
}

/// A pixel rectangle: left, top, right, bottom.
pub type Rect = (f64, f64, f64, f64);

fn overlaps(a: Rect, b: Rect) -> bool {
    a.0 < b.2 + 2.0 && b.0 < a.2 + 2.0 && a.1 < b.3 + 2.0 && b.1 < a.3 + 2.0
}

/// Whether the segment `a`-`b` passes through `r` (Liang-Barsky clipping).
fn segment_crosses(a: (f64, f64), b: (f64, f64), r: Rect) -> bool {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0f64, 1f64);
    for (p, q) in [
        (-dx, a.0 - r.0),
        (dx, r.2 - a.0),
        (-dy, a.1 - r.1),
        (dy, r.3 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return false;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

/// How many segments of the drawn lines (polylines in px) pass through `r`.
fn lines_crossed(r: Rect, lines: &[Vec<(f64, f64)>]) -> usize {
    lines
        .iter()
        .flat_map(|l| l.windows(2))
        .filter(|w| segment_crosses(w[0], w[1], r))
        .count()
}

/// Places each label (width, anchor x, anchor y in px) next to its anchor: above or below it,
/// right or left of it, moving further out until it overlaps no placed label and no `obstacle`
/// (the break crosses) and stays inside `plot`. Among those places it takes the one whose pale
/// box hides the fewest segments of the drawn `lines` (polylines in px), the nearest on a tie.
/// Returns each label's box, or None when it fits nowhere within five rows of its anchor.
pub fn place_near(
    labels: &[(f64, f64, f64)],
    obstacles: &[Rect],
    plot: Rect,
    lines: &[Vec<(f64, f64)>],
) -> Vec<Option<Rect>> {
    let mut taken: Vec<Rect> = obstacles.to_vec();
    let mut out = Vec::new();
    for &(w, ax, ay) in labels {
        let mut candidates = Vec::new();
        for k in 0..5 {
            let step = k as f64 * (LABEL_H + 2.0);
            for top in [ay - 12.0 - LABEL_H - step, ay + 12.0 + step] {
                for left in [ax + 6.0, ax - 6.0 - w, ax - w / 2.0] {
                    candidates.push((left, top, left + w, top + LABEL_H));
                }
            }
        }
        // `min_by_key` keeps the first of equal keys: candidates are in order of distance.
        let found = candidates
            .into_iter()
            .filter(|r| {
                r.0 >= plot.0
                    && r.2 <= plot.2
                    && r.1 >= plot.1
                    && r.3 <= plot.3
                    && !taken.iter().any(|t| overlaps(*r, *t))
            })
            .min_by_key(|r| lines_crossed(*r, lines));
        if let Some(r) = found {
            taken.push(r);
        }
        out.push(found);
    }
    out
}

/// The leader line from a break's point at `anchor` to its label's box `b`, when the box lies
/// further than one label row from the point (a label right beside its cross needs none): from
/// the edge of the cross (`cross` px out) to the nearest point of the box.
pub fn leader(anchor: (f64, f64), b: Rect, cross: f64) -> Option<((f64, f64), (f64, f64))> {
    let to = (anchor.0.clamp(b.0, b.2), anchor.1.clamp(b.1, b.3));
    let (dx, dy) = (to.0 - anchor.0, to.1 - anchor.1);
    let d = dx.hypot(dy);
    if d <= LABEL_H + 6.0 {
        return None;
    }
    let from = (
        anchor.0 + dx / d * (cross + 2.0),
        anchor.1 + dy / d * (cross + 2.0),
    );
    Some((from, to))
}

/// How many x-axis labels fit: request numbers of `n`'s width with room between them.
pub fn x_label_count(n: usize, plot_width: f64) -> usize {
    let digits = n.max(1).to_string().len() as f64;
    ((plot_width / (digits * 10.0 + 28.0)) as usize).clamp(2, 25)
}

impl Draw for PerRequest {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError>
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
        let groups = coinciding(&self.lines);
        let plot_left = 12.0 + LEFT as f64;
        let plot_width = (w - LEGEND) as f64 - plot_left - 8.0;
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
            .x_labels(x_label_count(n, plot_width).min(n))
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
        self.draw_lines(&mut chart, &groups, n)?;
        let dropped = self.draw_break_labels(&top, &chart, &groups, n)?;
        self.draw_legend(&legend_area, &groups, dropped)?;
        self.draw_strip(&strip, x_range, plot_left, plot_width)
    }
}

type Plot<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

impl PerRequest {
    /// The lines (one per group of identical ones), their points, ping triangles and break
    /// crosses.
    fn draw_lines<DB: DrawingBackend>(
        &self,
        chart: &mut Plot<'_, DB>,
        groups: &[(usize, Vec<usize>)],
        n: usize,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        // Markers shrink on long sessions so the line stays readable.
        let dot = if n > 200 {
            0
        } else if n > 60 {
            2
        } else {
            4
        };
        // Thin lines on long sessions: the bitmap backend joins thick segments with mitred
        // corners, and a 0-100-0 dip one pixel wide would spike far above the plot.
        let width = if n > 200 { 1 } else { 3 };
        for (k, (rep, _)) in groups.iter().enumerate() {
            let line = &self.lines[*rep];
            let color = strategy_color(&line.name);
            // Lines drawn earlier are wider, so a line that runs along another one shows as
            // a coloured edge instead of vanishing.
            let width = if n > 200 {
                width
            } else {
                width + (groups.len() - 1 - k) as u32 * 4 / groups.len().max(2) as u32
            };
            let points: Vec<(f64, f64)> = line
                .values
                .iter()
                .enumerate()
                .map(|(k, v)| ((k + 1) as f64, *v))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(width)))
                .map_err(err)?;
            if dot > 0 {
                chart
                    .draw_series(points.iter().map(|p| Circle::new(*p, dot, color.filled())))
                    .map_err(err)?;
            }
            // Keep-alive pings: a triangle outlined in black on the point.
            let pings: Vec<(f64, f64)> = line
                .pings
                .iter()
                .filter_map(|r| points.get(r - 1).copied())
                .collect();
            chart
                .draw_series(
                    pings
                        .iter()
                        .map(|p| TriangleMarker::new(*p, 10, BLACK.filled())),
                )
                .map_err(err)?;
            chart
                .draw_series(
                    pings
                        .iter()
                        .map(|p| TriangleMarker::new(*p, 6, color.filled())),
                )
                .map_err(err)?;
        }
        // Breaks: a cross on the point, drawn over every line so none hides under another
        // strategy's line; the reason is labelled beside it.
        for (rep, members) in groups {
            let line = &self.lines[*rep];
            for b in members.iter().flat_map(|m| &self.lines[*m].breaks) {
                if let Some(v) = line.values.get(b.request - 1) {
                    chart
                        .draw_series(std::iter::once(Cross::new(
                            (b.request as f64, *v),
                            if n > 200 { 5 } else { 8 },
                            strategy_color(&line.name).stroke_width(3),
                        )))
                        .map_err(err)?;
                }
            }
        }
        Ok(())
    }

    /// Each break label beside its break's point (on a pale box so lines do not cross the
    /// text). Returns how many labels found no room.
    fn draw_break_labels<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        chart: &Plot<'_, DB>,
        groups: &[(usize, Vec<usize>)],
        n: usize,
    ) -> Result<usize, ChartError>
    where
        DB::ErrorType: 'static,
    {
        let labels = break_labels(&self.lines);
        let base = area.get_base_pixel();
        // The drawn line a strategy's point lies on (its group's representative).
        let drawn = |i: usize| {
            groups
                .iter()
                .find(|(_, m)| m.contains(&i))
                .map_or(i, |(rep, _)| *rep)
        };
        let px = |req: usize, line: usize| {
            let v = self.lines[drawn(line)]
                .values
                .get(req - 1)
                .copied()
                .unwrap_or(0.0);
            let (x, y) = chart.backend_coord(&(req as f64, v));
            ((x - base.0) as f64, (y - base.1) as f64)
        };
        let cross = if n > 200 { 5.0 } else { 8.0 };
        let obstacles: Vec<Rect> = self
            .lines
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.breaks.iter().map(move |b| (b.request, i)))
            .chain(
                self.lines
                    .iter()
                    .enumerate()
                    .flat_map(|(i, l)| l.pings.iter().map(move |r| (*r, i))),
            )
            .map(|(req, i)| {
                let (x, y) = px(req, i);
                (x - cross, y - cross, x + cross, y + cross)
            })
            .collect();
        let anchors: Vec<(f64, f64, f64)> = labels
            .iter()
            .map(|l| {
                // A shared label sits at the highest of its strategies' points.
                let line = l
                    .who
                    .iter()
                    .copied()
                    .min_by(|a, b| px(l.requests[0], *a).1.total_cmp(&px(l.requests[0], *b).1))
                    .unwrap_or(0);
                let (x, y) = px(l.requests[0], line);
                (super::raster::text_width(&l.text, 14.0) + 6.0, x, y)
            })
            .collect();
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let plot = (
            (xr.start - base.0) as f64,
            (yr.start - base.1) as f64,
            (xr.end - base.0) as f64,
            (yr.end - base.1) as f64,
        );
        // The drawn polylines, so a label's box covers as little data as it can.
        let polylines: Vec<Vec<(f64, f64)>> = groups
            .iter()
            .map(|(rep, _)| {
                (1..=self.lines[*rep].values.len())
                    .map(|req| px(req, *rep))
                    .collect()
            })
            .collect();
        let boxes = place_near(&anchors, &obstacles, plot, &polylines);
        self.paint_break_labels(area, &labels, &boxes, &anchors, cross)?;
        Ok(boxes.iter().filter(|b| b.is_none()).count())
    }

    /// Draws the placed labels: a leader line from each label's box to its break when the box
    /// sits away from it, then the boxes and their text (`None`: the label found no room).
    fn paint_break_labels<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        labels: &[BreakLabel],
        boxes: &[Option<Rect>],
        anchors: &[(f64, f64, f64)],
        cross: f64,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let color = |l: &BreakLabel| {
            l.series.map_or(RGBColor(60, 60, 60), |i| {
                strategy_color(&self.lines[i].name)
            })
        };
        // Leader lines first, so the label boxes drawn next cover their ends.
        for ((l, b), a) in labels.iter().zip(boxes).zip(anchors) {
            if let Some((from, to)) = b.and_then(|b| leader((a.1, a.2), b, cross)) {
                area.draw(&PathElement::new(
                    vec![
                        (from.0.round() as i32, from.1.round() as i32),
                        (to.0.round() as i32, to.1.round() as i32),
                    ],
                    color(l).stroke_width(1),
                ))
                .map_err(err)?;
            }
        }
        for (l, b) in labels.iter().zip(boxes) {
            let Some((x0, y0, x1, y1)) = *b else { continue };
            let color = color(l);
            area.draw(&Rectangle::new(
                [(x0 as i32, y0 as i32), (x1 as i32, y1 as i32)],
                WHITE.mix(0.85).filled(),
            ))
            .map_err(err)?;
            area.draw(&Text::new(
                l.text.clone(),
                (x0 as i32 + 3, y0 as i32 + 2),
                text(14).color(&color),
            ))
            .map_err(err)?;
        }
        Ok(())
    }

    /// One legend entry per drawn line (identical strategies named together, near-identical
    /// ones marked), then the notes: what `=` and `≈` mean, the ping marker, labels left out.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        groups: &[(usize, Vec<usize>)],
        dropped: usize,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let near = near_identical(&self.lines, groups, self.y_max);
        let entries: Vec<(String, RGBColor, bool)> = groups
            .iter()
            .zip(&near)
            .map(|((rep, members), near)| {
                let mut name = self.lines[*rep].name.clone();
                for m in &members[1..] {
                    name.push_str(&format!("\n= {}", self.lines[*m].name));
                }
                if let Some(j) = near {
                    name.push_str(&format!("\n≈ {}", self.lines[*j].name));
                }
                (name, strategy_color(&self.lines[*rep].name), false)
            })
            .collect();
        legend(area, &entries)?;
        let mut notes: Vec<&str> = Vec::new();
        if groups.len() < self.lines.len() {
            notes.extend(["= : identical values,", "drawn as one line"]);
        }
        if near.iter().any(Option::is_some) {
            notes.extend([
                "≈ : within 1.5% of the axis",
                "at every request: drawn",
                "over the line it names",
            ]);
        }
        let pings = self.lines.iter().any(|l| !l.pings.is_empty());
        let more = format!("+{dropped} break label(s) left out:");
        if dropped > 0 {
            notes.extend([more.as_str(), "see the cache-break table"]);
        }
        let mut y = legend_height(&entries) + 10;
        if pings {
            // Drawn like the entries above it: the marker in the swatch column, the name in
            // the legend's size and colour.
            area.draw(&TriangleMarker::new((19, y), 8, BLACK.filled()))
                .map_err(err)?;
            area.draw(&Text::new(
                "keep-alive ping",
                (40, y),
                text(16).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                )),
            ))
            .map_err(err)?;
            y += 28;
        }
        for line in notes {
            area.draw(&Text::new(
                line,
                (8, y),
                text(13).color(&RGBColor(90, 90, 90)),
            ))
            .map_err(err)?;
            y += 16;
        }
        Ok(())
    }
}

/// A run of consecutive requests drawn as one block of the mode strip.
struct Run {
    start: usize,
    end: usize,
    phase: Phase,
    stream: String,
}

impl PerRequest {
    fn runs(&self) -> Vec<Run> {
        let phases = &self.timeline.phases;
        let stream = |i: usize| {
            self.timeline
                .streams
                .get(i)
                .cloned()
                .unwrap_or_else(|| "main".to_string())
        };
        let mut out = Vec::new();
        let mut start = 0;
        while start < phases.len() {
            let p = phases[start];
            let mut end = start;
            while end + 1 < phases.len() && phases[end + 1] == p && stream(end + 1) == stream(start)
            {
                end += 1;
            }
            out.push(Run {
                start,
                end,
                phase: p,
                stream: stream(start),
            });
            start = end + 1;
        }
        out
    }

    fn draw_strip<DB: DrawingBackend>(
        &self,
        strip: &DrawingArea<DB, Shift>,
        x_range: std::ops::Range<f64>,
        plot_left: f64,
        plot_width: f64,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let n = self.timeline.phases.len().max(1);
        let px_per_request = plot_width / n as f64;
        let mut chart = ChartBuilder::on(strip)
            .margin(12)
            .margin_top(0)
            .margin_right(8)
            .y_label_area_size(LEFT)
            .build_cartesian_2d(x_range, 0f64..1f64)
            .map_err(err)?;
        let runs = self.runs();
        let spans = main_spans(&runs);
        draw_spans(&mut chart, &spans, &runs, n)?;
        self.draw_span_labels(&mut chart, &spans, px_per_request)?;
        draw_burst_labels(&mut chart, &runs, px_per_request)?;
        self.draw_events(&mut chart, px_per_request, plot_left)?;
        strip
            .draw(&Text::new("mode", (14, 20), text(16)))
            .map_err(err)?;
        Ok(())
    }

    /// Each main-stream phase's name, in the widest stretch of its span between event lines (so
    /// the name crosses none), shortened or left out where it does not fit.
    fn draw_span_labels<DB: DrawingBackend>(
        &self,
        chart: &mut Plot<'_, DB>,
        spans: &[(usize, usize, Phase)],
        px_per_request: f64,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        for (start, end, p) in spans {
            // The widest stretch of the span between event lines, so the name crosses none.
            let (lo, hi) = (*start as f64 + 0.5, *end as f64 + 1.5);
            let mut cuts: Vec<f64> = self
                .timeline
                .events
                .iter()
                .map(|e| e.x)
                .filter(|x| *x > lo && *x < hi)
                .collect();
            cuts.insert(0, lo);
            cuts.push(hi);
            let (a, b) = cuts
                .windows(2)
                .map(|w| (w[0], w[1]))
                .max_by(|x, y| (x.1 - x.0).total_cmp(&(y.1 - y.0)))
                .unwrap_or((lo, hi));
            let span_px = (b - a) * px_per_request;
            let Some(label) = [p.label(), label_for(*p, 1)]
                .into_iter()
                .find(|l| text_width(l, 15) + 6.0 <= span_px)
            else {
                continue;
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    ((a + b) / 2.0, 0.93),
                    text(15).pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    )),
                )))
                .map_err(err)?;
        }
        Ok(())
    }

    /// Events: a line each; labels at the same position are joined, then placed in two rows
    /// without overlapping; labels that fit nowhere are left out (the line stays).
    fn draw_events<DB: DrawingBackend>(
        &self,
        chart: &mut Plot<'_, DB>,
        px_per_request: f64,
        plot_left: f64,
    ) -> Result<(), ChartError>
    where
        DB::ErrorType: 'static,
    {
        let mut groups: Vec<(f64, Vec<String>)> = Vec::new();
        for e in &self.timeline.events {
            match groups.last_mut() {
                Some((x, labels)) if (*x - e.x).abs() < 1e-9 => labels.push(e.label.clone()),
                _ => groups.push((e.x, vec![e.label.clone()])),
            }
        }
        for (x, _) in &groups {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(*x, 0.47), (*x, 1.0)],
                    BLACK.stroke_width(2),
                )))
                .map_err(err)?;
        }
        let rows = [0.42, 0.18];
        let mut rows_end = [f64::NEG_INFINITY; 2];
        for (x, labels) in &groups {
            let label = labels.join(", ");
            let w = text_width(&label, 14);
            let centre = (x - 0.5) * px_per_request;
            let left = (centre - w / 2.0).max(-plot_left + 4.0);
            let Some(row) = (0..2).find(|&r| left >= rows_end[r] + 10.0) else {
                continue;
            };
            rows_end[row] = left + w;
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (*x, rows[row]),
                    text(14).pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    )),
                )))
                .map_err(err)?;
        }
        Ok(())
    }
}

/// Phases of the main stream as spans (subagent requests in between do not split a phase);
/// subagent runs sit in a lower band of their own, so a burst of parallel subagents reads as
/// one block instead of slivers of text.
fn main_spans(runs: &[Run]) -> Vec<(usize, usize, Phase)> {
    let mut spans: Vec<(usize, usize, Phase)> = Vec::new();
    for r in runs.iter().filter(|r| r.stream == "main") {
        match spans.last_mut() {
            Some((_, end, p)) if *p == r.phase => *end = r.end,
            _ => spans.push((r.start, r.end, r.phase)),
        }
    }
    // A session that starts in a subagent: extend the first span back to request 1.
    if let Some(first) = spans.first_mut() {
        first.0 = 0;
    }
    spans
}

/// The main stream's spans, each up to the next, and the subagent runs in their lower band.
fn draw_spans<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    spans: &[(usize, usize, Phase)],
    runs: &[Run],
    n: usize,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    for (k, (start, end, p)) in spans.iter().enumerate() {
        // Up to the next span, so subagent requests between phases stay covered.
        let next = spans.get(k + 1).map_or(n - 1, |s| s.0.saturating_sub(1));
        let end = (*end).max(next);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(*start as f64 + 0.5, 0.55), (end as f64 + 1.5, 1.0)],
                phase_color(*p).filled(),
            )))
            .map_err(err)?;
    }
    for r in runs.iter().filter(|r| r.stream != "main") {
        let RGBColor(cr, cg, cb) = phase_color(r.phase);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(r.start as f64 + 0.5, 0.55), (r.end as f64 + 1.5, 0.72)],
                RGBColor(cr / 4 * 3, cg / 4 * 3, cb / 4 * 3).filled(),
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// Subagent bursts: consecutive subagent runs share one label naming the streams.
fn draw_burst_labels<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    runs: &[Run],
    px_per_request: f64,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let mut bursts: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for r in runs.iter().filter(|r| r.stream != "main") {
        match bursts.last_mut() {
            Some((_, end, names)) if r.start == *end + 1 => {
                *end = r.end;
                if !names.contains(&r.stream) {
                    names.push(r.stream.clone());
                }
            }
            _ => bursts.push((r.start, r.end, vec![r.stream.clone()])),
        }
    }
    for (start, end, names) in &bursts {
        let span_px = (end - start + 1) as f64 * px_per_request;
        let candidates = [
            format!("subagents: {}", names.join(", ")),
            format!("{} subagents", names.len()),
            format!("{}", names.len()),
        ];
        let Some(label) = candidates
            .into_iter()
            .find(|l| text_width(l, 13) + 4.0 <= span_px)
        else {
            continue;
        };
        chart
            .draw_series(std::iter::once(Text::new(
                label,
                ((*start as f64 + *end as f64) / 2.0 + 1.0, 0.70),
                text(13)
                    .color(&WHITE)
                    .pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    )),
            )))
            .map_err(err)?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_crosses_a_box_only_when_it_passes_through_it() {
        let r = (10.0, 10.0, 20.0, 20.0);
        assert!(segment_crosses((0.0, 15.0), (30.0, 15.0), r));
        assert!(segment_crosses((0.0, 0.0), (30.0, 30.0), r));
        assert!(!segment_crosses((0.0, 0.0), (30.0, 5.0), r));
        assert!(!segment_crosses((0.0, 0.0), (8.0, 30.0), r));
    }

    #[test]
    fn a_label_avoids_the_drawn_lines_when_a_free_place_exists() {
        let plot = (0.0, 0.0, 400.0, 300.0);
        // Anchor at (100, 150); the nearest place (right, above) is y 121..138, x 106..206.
        let label = [(100.0, 100.0, 150.0)];
        let free = place_near(&label, &[], plot, &[]);
        assert_eq!(free[0], Some((106.0, 121.0, 206.0, 138.0)));
        // A line straight through that box: the label moves to a place the line misses.
        let line = vec![vec![(100.0, 130.0), (300.0, 130.0)]];
        let moved = place_near(&label, &[], plot, &line)[0].unwrap();
        assert_ne!(Some(moved), free[0]);
        assert_eq!(lines_crossed(moved, &line), 0, "{moved:?}");
    }

    #[test]
    fn a_label_moved_away_from_its_point_gets_a_leader_line_to_its_box() {
        // Right beside the cross (the first place tried: 12 px above, 6 px right): no leader.
        assert_eq!(
            leader((100.0, 150.0), (106.0, 121.0, 206.0, 138.0), 8.0),
            None
        );
        // Three rows up: a line from the cross's edge (10 px out) to the box's nearest point.
        let (from, to) = leader((100.0, 150.0), (106.0, 83.0, 206.0, 100.0), 8.0).unwrap();
        assert_eq!(to, (106.0, 100.0));
        let d = (from.0 - 100.0).hypot(from.1 - 150.0);
        assert!((d - 10.0).abs() < 1e-9, "{from:?}");
        assert!(from.1 < 150.0 && from.0 > 100.0, "{from:?}");
    }

    #[test]
    fn three_breaks_of_one_kind_share_one_label_naming_the_span() {
        let line = |name: &str, at: &[usize]| Line {
            name: name.into(),
            values: vec![0.0; 5],
            breaks: at
                .iter()
                .map(|&r| Break {
                    request: r,
                    short: "tools changed".into(),
                    ..Break::default()
                })
                .collect(),
            pings: Vec::new(),
        };
        let lines = [
            line("a", &[2, 3, 4]),
            line("b", &[2, 3, 4]),
            line("c", &[1, 5]),
        ];
        let l = break_labels(&lines);
        let texts: Vec<(&str, &[usize])> = l
            .iter()
            .map(|x| (x.text.as_str(), &x.requests[..]))
            .collect();
        assert_eq!(
            texts,
            [
                ("c: tools changed", &[1][..]),
                ("a, b: tools changed (2 .. 4, 3 requests)", &[2, 3, 4][..]),
                ("c: tools changed", &[5][..]),
            ]
        );
    }
}
