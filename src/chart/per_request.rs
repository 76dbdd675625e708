//! The shared layout of per-request charts: one line per strategy, cache breaks marked with their
//! reason, and the mode timeline from the reference machine's trace underneath, so a break lines
//! up with the mode switch that caused it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::{self, Break, Group, Phase, Timeline};
use super::style::{err, legend, legend_height, phase_color, strategy_color, text, Draw, LEGEND};

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
        PerRequest {
            title: format!("{title} - {} ({} cache)", group.scenario, group.cache),
            y_desc: y_desc.to_string(),
            y_format,
            // Break labels get their own band above the plot: no headroom needed for them.
            y_max: top * 1.06,
            lines,
            timeline,
        }
    }
}

/// Pixel height of one row of break labels.
const LABEL_ROW: u32 = 19;
/// At most this many rows of break labels; the rest are counted, not drawn.
const MAX_LABEL_ROWS: usize = 5;
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

/// One label above the plot: the breaks of one kind, by one or several strategies.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakLabel {
    pub text: String,
    /// Requests it points at (the first one anchors the label).
    pub requests: Vec<usize>,
    /// Colour index of its only strategy, or None when several share it.
    pub series: Option<usize>,
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
        .map(|(who, short, requests)| {
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
            // The requests lead the label, so it needs no pointer: "[2, 6] toolset-swap: ...".
            let at = if requests.len() <= 3 {
                requests
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                format!(
                    "{} .. {}, {} requests",
                    requests[0],
                    requests[requests.len() - 1],
                    requests.len()
                )
            };
            BreakLabel {
                text: format!("[{at}] {who_text}: {short}"),
                requests,
                series: (who.len() == 1).then(|| who[0]),
            }
        })
        .collect();
    out.sort_by_key(|l| l.requests[0]);
    out
}

/// Places labels in rows so none overlaps another: each label starts at its x (or ends there
/// when it would run past `width`). Returns (label index, row, left px) and the labels that
/// did not fit in `max_rows`.
pub fn place_labels(
    widths_and_x: &[(f64, f64)],
    width: f64,
    max_rows: usize,
) -> (Vec<(usize, usize, f64)>, usize) {
    let mut rows_end: Vec<f64> = Vec::new();
    let mut placed = Vec::new();
    let mut dropped = 0;
    for (i, &(w, x)) in widths_and_x.iter().enumerate() {
        let left = if x + w > width { (x - w).max(0.0) } else { x };
        match rows_end.iter().position(|&end| left >= end + 8.0) {
            Some(r) => {
                rows_end[r] = left + w;
                placed.push((i, r, left));
            }
            None if rows_end.len() < max_rows => {
                rows_end.push(left + w);
                placed.push((i, rows_end.len() - 1, left));
            }
            None => dropped += 1,
        }
    }
    (placed, dropped)
}

/// How many x-axis labels fit: request numbers of `n`'s width with room between them.
pub fn x_label_count(n: usize, plot_width: f64) -> usize {
    let digits = n.max(1).to_string().len() as f64;
    ((plot_width / (digits * 10.0 + 28.0)) as usize).clamp(2, 25)
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
        let groups = coinciding(&self.lines);
        // Labels first: their rows decide the band's height.
        let plot_left = 12.0 + LEFT as f64;
        let plot_width = (w - LEGEND) as f64 - plot_left - 8.0;
        let x_px = |x: f64| plot_left + (x - 0.5) / n as f64 * plot_width;
        let labels = break_labels(&self.lines);
        let geometry: Vec<(f64, f64)> = labels
            .iter()
            .map(|l| {
                (
                    text_width(&l.text, 14),
                    x_px(l.requests[0] as f64) - plot_left,
                )
            })
            .collect();
        let (placed, dropped) = place_labels(&geometry, plot_width, MAX_LABEL_ROWS);
        let rows = placed.iter().map(|p| p.1 + 1).max().unwrap_or(0) + usize::from(dropped > 0);
        let band_h = if rows == 0 {
            0
        } else {
            6 + LABEL_ROW * rows as u32
        };
        let (band, top) = top.split_vertically(band_h);
        let x_range = 0.5f64..(n as f64 + 0.5);
        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .margin_top(if rows == 0 { 12 } else { 4 })
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
        }
        // Breaks: a cross on the point, drawn over every line so none hides under another
        // strategy's line; the reason is in the band above.
        for (rep, members) in &groups {
            for b in members.iter().flat_map(|m| &self.lines[*m].breaks) {
                let line = &self.lines[*rep];
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
        for (i, row, left) in placed {
            let l = &labels[i];
            let color = l
                .series
                .map_or(RGBColor(60, 60, 60), |i| strategy_color(&self.lines[i].name));
            let y = 4 + (row as i32) * LABEL_ROW as i32;
            let x = (plot_left + left) as i32;
            band.draw(&Text::new(l.text.clone(), (x, y), text(14).color(&color)))
                .map_err(err)?;
        }
        if dropped > 0 {
            let y = 4 + (rows as i32 - 1) * LABEL_ROW as i32;
            band.draw(&Text::new(
                format!("+{dropped} more break label(s): see the cache-break table"),
                (plot_left as i32, y),
                text(14).color(&RGBColor(90, 90, 90)),
            ))
            .map_err(err)?;
        }
        // One legend entry per drawn line; coinciding strategies are named together.
        let entries: Vec<(String, RGBColor, bool)> = groups
            .iter()
            .map(|(rep, members)| {
                let mut name = self.lines[*rep].name.clone();
                for m in &members[1..] {
                    name.push_str(&format!("\n= {}", self.lines[*m].name));
                }
                (name, strategy_color(&self.lines[*rep].name), false)
            })
            .collect();
        legend(&legend_area, &entries)?;
        if groups.len() < self.lines.len() {
            let used = legend_height(&entries);
            legend_area
                .draw(&Text::new(
                    "= : identical values,",
                    (8, used + 10),
                    text(13).color(&RGBColor(90, 90, 90)),
                ))
                .map_err(err)?;
            legend_area
                .draw(&Text::new(
                    "drawn as one line",
                    (8, used + 26),
                    text(13).color(&RGBColor(90, 90, 90)),
                ))
                .map_err(err)?;
        }
        self.draw_strip(&strip, x_range, plot_left, plot_width)
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
    ) -> Result<(), String>
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
        // Phases of the main stream as spans (subagent requests in between do not split a
        // phase); subagent runs sit in a lower band of their own, so a burst of parallel
        // subagents reads as one block instead of slivers of text.
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
        for (start, end, p) in &spans {
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
        // Subagent bursts: consecutive subagent runs share one label naming the streams.
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
        // Events: a line each; labels at the same position are joined, then placed in two
        // rows without overlapping; labels that fit nowhere are left out (the line stays).
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
