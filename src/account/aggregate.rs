//! Adding the account's requests up by day, project and model, the way ccusage reports usage,
//! with plancache's prediction beside what was billed and the breaks by cause.

use std::collections::BTreeMap;

use super::figures::{day_string, Counters, RequestFigures};
use super::SessionOutcome;

/// One row of a breakdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Sessions with at least one request in the row.
    pub sessions: usize,
    /// The replay's input-side counters.
    pub predicted: Counters,
    /// The transcripts' billed input-side counters.
    pub billed: Counters,
    /// Output tokens as logged.
    pub output_tokens: u64,
    /// Their price in dollars (the same on both sides).
    pub output_usd: f64,
    /// Requests the replay predicts as breaks.
    pub predicted_breaks: usize,
    /// Requests the billed usage shows as breaks.
    pub billed_breaks: usize,
    /// Predicted breaks by the cache model's cause (`messages: ttl expired`).
    pub causes: BTreeMap<String, usize>,
}

impl Totals {
    /// Adds one request's figures.
    pub fn add(&mut self, r: &RequestFigures) {
        self.predicted.add(&r.predicted);
        self.billed.add(&r.billed);
        self.output_tokens += r.output_tokens;
        self.output_usd += r.output_usd;
        if r.predicted_break {
            self.predicted_breaks += 1;
            *self.causes.entry(r.cause()).or_default() += 1;
        }
        self.billed_breaks += usize::from(r.billed_break);
    }

    /// Predicted cost in dollars: input side plus output.
    pub fn predicted_usd(&self) -> f64 {
        self.predicted.usd + self.output_usd
    }

    /// Billed cost in dollars: input side plus output.
    pub fn billed_usd(&self) -> f64 {
        self.billed.usd + self.output_usd
    }
}

/// A key a request is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// The UTC day the request was sent (`YYYY-MM-DD`).
    Day,
    /// The session's project.
    Project,
    /// The model the request ran on.
    Model,
}

impl By {
    /// The key's name as a column header (`day`, `project`, `model`).
    pub fn title(self) -> &'static str {
        match self {
            By::Day => "day",
            By::Project => "project",
            By::Model => "model",
        }
    }
}

/// Totals over every session.
pub fn overall(sessions: &[SessionOutcome]) -> Totals {
    let mut t = Totals {
        sessions: sessions.len(),
        ..Totals::default()
    };
    for r in sessions.iter().flat_map(|s| &s.requests) {
        t.add(r);
    }
    t
}

/// Totals per key, in key order. A session counts in every row it has requests in.
pub fn breakdown(sessions: &[SessionOutcome], by: By) -> Vec<(String, Totals)> {
    let mut rows: BTreeMap<String, (Totals, usize)> = BTreeMap::new();
    for (i, s) in sessions.iter().enumerate() {
        for r in &s.requests {
            let key = match by {
                By::Day => day_string(r.sent_at_ms),
                By::Project => s.files.project.clone(),
                By::Model => r.model.clone(),
            };
            let (t, last) = rows.entry(key).or_insert((Totals::default(), usize::MAX));
            if *last != i {
                t.sessions += 1;
                *last = i;
            }
            t.add(r);
        }
    }
    rows.into_iter().map(|(k, (t, _))| (k, t)).collect()
}

/// A predicted break and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakRow {
    /// The session's id.
    pub session: String,
    /// The session's project.
    pub project: String,
    /// The stream (`main`, `agent-1`, ...).
    pub stream: String,
    /// 1-based within its stream.
    pub request: usize,
    /// Recorded send time (epoch ms).
    pub sent_at_ms: u64,
    /// The cache model's cause, the reason up to its place (`messages: ttl expired`).
    pub cause: String,
    /// The cache model's whole account of where and why reuse stopped.
    pub reason: String,
    /// Tokens of the previous prompt processed again.
    pub lost_tokens: u64,
    /// What re-processing them cost beyond reading them: lost × input price × (write − read
    /// multiplier), at the multiplier of the TTL the request wrote.
    pub extra_usd: f64,
    /// Whether the billed usage shows a break there too.
    pub billed_break: bool,
}

/// The `n` predicted breaks that lost the most tokens, largest first (ties: earlier first).
pub fn top_breaks(
    sessions: &[SessionOutcome],
    prices: &crate::cache::PriceTable,
    n: usize,
) -> Vec<BreakRow> {
    let mut out = Vec::new();
    for s in sessions {
        let mut prev: Option<&RequestFigures> = None;
        for r in &s.requests {
            let same_stream = prev.filter(|p| p.stream == r.stream);
            if let (true, Some(p)) = (r.predicted_break, same_stream) {
                let lost = r.lost_tokens(p.predicted.prompt);
                let (w, rd, price) = prices.get(&r.model).map_or((1.25, 0.1, 0.0), |m| {
                    let w = if r.predicted.write_1h > r.predicted.write_5m {
                        m.write_1h
                    } else {
                        m.write_5m
                    };
                    (w, m.read, m.input / 1_000_000.0)
                });
                out.push(BreakRow {
                    session: s.files.session_id.clone(),
                    project: s.files.project.clone(),
                    stream: r.stream.clone(),
                    request: r.request,
                    sent_at_ms: r.sent_at_ms,
                    cause: r.cause(),
                    reason: r.reason.clone(),
                    lost_tokens: lost,
                    extra_usd: lost as f64 * (w - rd) * price,
                    billed_break: r.billed_break,
                });
            }
            prev = Some(r);
        }
    }
    out.sort_by(|a, b| {
        b.lost_tokens
            .cmp(&a.lost_tokens)
            .then(a.sent_at_ms.cmp(&b.sent_at_ms))
    });
    out.truncate(n);
    out
}
