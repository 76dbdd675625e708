//! The capacity curve and the TTL curve: a workload replayed over a grid of pool sizes, TTLs
//! and keep-alive intervals, with the knee of the capacity curve marked.

use std::time::Duration;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::font::FAMILY;
use crate::chart::Draw;

/// One axis of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Axis {
    /// Pool sizes in blocks.
    KvBlocks(Vec<u64>),
    /// Provider cache TTLs.
    Ttl(Vec<Duration>),
    /// Keep-alive intervals (`None`: off).
    Keepalive(Vec<Option<Duration>>),
}

/// `1000`, `1k`, `64k`, `1M`, `1.5M` as a count.
fn count(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1e3),
        'M' | 'm' => (&s[..s.len() - 1], 1e6),
        'G' | 'g' => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 1.0).then(|| (v * mult).round() as u64)
}

/// Pool sizes from `lo` to `hi`, doubling (log steps), `hi` last.
pub fn log_steps(lo: u64, hi: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut v = lo.max(1);
    while v < hi {
        out.push(v);
        v = v.saturating_mul(2);
    }
    out.push(hi);
    out
}

fn duration(s: &str) -> Option<Duration> {
    humantime::parse_duration(s).ok()
}

impl Axis {
    /// Parses `kv-blocks=LO..HI` (log steps) or `kv-blocks=A,B,C`, `ttl=5m,1h`,
    /// `keepalive=off,4m30s`.
    pub fn parse(s: &str) -> Result<Axis, super::WorkloadError> {
        let bad = |what: &str| super::WorkloadError::Axis {
            spec: s.to_string(),
            what: what.to_string(),
        };
        let (key, vals) = s.split_once('=').ok_or_else(|| bad("no `=`"))?;
        match key {
            "kv-blocks" => {
                if let Some((lo, hi)) = vals.split_once("..") {
                    let (lo, hi) = (count(lo), count(hi));
                    match (lo, hi) {
                        (Some(lo), Some(hi)) if lo <= hi => Ok(Axis::KvBlocks(log_steps(lo, hi))),
                        _ => Err(bad("not a range of block counts LO..HI with LO <= HI")),
                    }
                } else {
                    let v: Option<Vec<u64>> = vals.split(',').map(count).collect();
                    v.map(Axis::KvBlocks)
                        .ok_or_else(|| bad("not a list of block counts"))
                }
            }
            "ttl" => {
                let v: Option<Vec<Duration>> = vals.split(',').map(duration).collect();
                v.filter(|v| v.iter().all(|d| !d.is_zero()))
                    .map(Axis::Ttl)
                    .ok_or_else(|| bad("not a list of durations"))
            }
            "keepalive" => {
                let v: Option<Vec<Option<Duration>>> = vals
                    .split(',')
                    .map(|x| {
                        if x == "off" {
                            Some(None)
                        } else {
                            duration(x).map(Some)
                        }
                    })
                    .collect();
                v.map(Axis::Keepalive)
                    .ok_or_else(|| bad("not a list of durations or `off`"))
            }
            other => Err(bad(&format!("unknown parameter `{other}`"))),
        }
    }
}

/// One point of a curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The swept value (blocks, or TTL seconds).
    pub x: f64,
    /// Overall hit rate at that value.
    pub hit_rate: f64,
    /// Overall cost in USD at that value.
    pub cost_usd: f64,
}

/// The smallest pool whose hit rate is within `tolerance` (0.01: one point) of `unbounded`.
pub fn knee(points: &[Point], unbounded: f64, tolerance: f64) -> Option<f64> {
    points
        .iter()
        .filter(|p| p.hit_rate >= unbounded - tolerance - 1e-12)
        .map(|p| p.x)
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.min(x))))
}

/// A line chart of hit rate (top) and cost (bottom) against the swept value.
pub struct CurveChart {
    /// Chart title.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Log-scaled x axis (pool sizes).
    pub log_x: bool,
    /// Named series of points.
    pub series: Vec<(String, Vec<Point>)>,
    /// The knee: an x value marked with a vertical line, and its label.
    pub knee: Option<(f64, String)>,
}

fn err<E: std::fmt::Display>(e: E) -> crate::chart::ChartError {
    crate::chart::ChartError::Draw(e.to_string())
}

fn text(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

impl CurveChart {
    fn x_range(&self) -> (f64, f64) {
        let xs = self.series.iter().flat_map(|(_, p)| p.iter().map(|p| p.x));
        let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        if lo > hi {
            (0.0, 1.0)
        } else if self.log_x {
            (lo.max(1.0).log10(), hi.max(lo + 1.0).log10())
        } else {
            (lo, if hi > lo { hi } else { lo + 1.0 })
        }
    }

    fn fx(&self, x: f64) -> f64 {
        if self.log_x {
            x.max(1.0).log10()
        } else {
            x
        }
    }

    fn panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        y_desc: &str,
        y: fn(&Point) -> f64,
    ) -> Result<(), crate::chart::ChartError>
    where
        DB::ErrorType: 'static,
    {
        let (lo, hi) = self.x_range();
        let top = self
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(y))
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.1;
        let log = self.log_x;
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .margin_right(24)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(lo..hi, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(y_desc)
            .x_label_formatter(&|x| {
                if log {
                    human(10f64.powf(*x))
                } else {
                    format!("{x:.0}")
                }
            })
            .label_style(text(14))
            .axis_desc_style(text(16))
            .draw()
            .map_err(err)?;
        for (i, (name, pts)) in self.series.iter().enumerate() {
            let c = Palette99::pick(i).to_rgba();
            let line: Vec<(f64, f64)> = pts.iter().map(|p| (self.fx(p.x), y(p))).collect();
            chart
                .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
            chart
                .draw_series(line.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
        if let Some((x, label)) = &self.knee {
            let x = self.fx(*x);
            chart
                .draw_series(LineSeries::new([(x, 0.0), (x, top)], RED.stroke_width(1)))
                .map_err(err)?
                .label(label.as_str())
                .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], RED.stroke_width(1)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font(text(14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)
    }
}

/// `1000` as `1k`, `1048576` as `1.0M`.
pub fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

impl Draw for CurveChart {
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), crate::chart::ChartError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(&self.title, text(22)).map_err(err)?;
        let (top, bottom) = root.split_vertically(root.dim_in_pixel().1 / 2);
        self.panel(&top, "hit rate", |p| p.hit_rate)?;
        self.panel(&bottom, "cost (USD)", |p| p.cost_usd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_with_log_steps() {
        assert_eq!(
            Axis::parse("kv-blocks=1k..10k").unwrap(),
            Axis::KvBlocks(vec![1000, 2000, 4000, 8000, 10_000])
        );
        assert_eq!(
            Axis::parse("keepalive=off,4m30s").unwrap(),
            Axis::Keepalive(vec![None, Some(Duration::from_secs(270))])
        );
        assert!(Axis::parse("kv-blocks=9..2").is_err());
        assert!(Axis::parse("size=3")
            .unwrap_err()
            .to_string()
            .contains("unknown parameter"));
    }

    #[test]
    fn the_knee_is_the_smallest_pool_within_one_point() {
        let p = |x, h| Point {
            x,
            hit_rate: h,
            cost_usd: 0.0,
        };
        // Unbounded 0.90: 0.895 is within a point, 0.85 is not; 8 is the smallest within.
        let pts = [p(4.0, 0.85), p(8.0, 0.895), p(16.0, 0.9)];
        assert_eq!(knee(&pts, 0.90, 0.01), Some(8.0));
        assert_eq!(knee(&pts[..1], 0.90, 0.01), None);
    }
}
