//! The ccusage-style views of an account: its requests added up per day, week, month, session
//! or 5-hour billing block, in the selection's time zone, billed beside predicted.
//!
//! A 5-hour block follows ccusage's definition (its blocks guide and `identifySessionBlocks`):
//! a block starts at the hour (UTC) of the first request after a gap and lasts 5 hours; a
//! request starts a new block when it falls 5 hours or more after its block's start, or 5 hours
//! or more after the account's previous request. Blocks span every session and project.

use std::collections::{BTreeMap, BTreeSet};

use super::aggregate::Totals;
use super::figures::RequestFigures;
use super::select::Selection;
use super::SessionOutcome;

/// How requests are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Per civil day in the zone.
    Daily,
    /// Per week (starting on `--start-of-week`).
    Weekly,
    /// Per calendar month.
    Monthly,
    /// Per session.
    Session,
    /// Per 5-hour billing block.
    Blocks,
}

/// The length of a billing block (ccusage's default `--session-length 5`).
pub const BLOCK_MS: u64 = 5 * 3_600_000;

impl View {
    /// Every view, in the order `--help` lists them.
    pub const ALL: [View; 5] = [
        View::Daily,
        View::Weekly,
        View::Monthly,
        View::Session,
        View::Blocks,
    ];

    /// The word on the command line (`daily`, ...).
    pub fn name(self) -> &'static str {
        match self {
            View::Daily => "daily",
            View::Weekly => "weekly",
            View::Monthly => "monthly",
            View::Session => "session",
            View::Blocks => "blocks",
        }
    }

    /// The view named `word`, if any.
    pub fn parse(word: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.name() == word)
    }

    /// The header of the key column.
    pub fn key_title(self) -> &'static str {
        match self {
            View::Daily => "Date",
            View::Weekly => "Week",
            View::Monthly => "Month",
            View::Session => "Session",
            View::Blocks => "Block Start",
        }
    }
}

/// One row of a view.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// The period or session the row adds up (`2025-10-01`, `2025-W..`, a session id, a block
    /// start `2025-10-01 09:00`).
    pub key: String,
    /// Projects with requests in the row.
    pub projects: BTreeSet<String>,
    /// Models with requests in the row (date suffix dropped).
    pub models: BTreeSet<String>,
    /// Epoch ms of the row's first and last request.
    pub first_ms: u64,
    /// See `first_ms`.
    pub last_ms: u64,
    /// Block view: the block's end (start + 5 h); other views: 0.
    pub end_ms: u64,
    /// The figures of the row's requests.
    pub totals: Totals,
}

impl Row {
    fn add(&mut self, session: &SessionOutcome, r: &RequestFigures) {
        if self.totals.billed.requests == 0 {
            self.first_ms = r.sent_at_ms;
        }
        self.first_ms = self.first_ms.min(r.sent_at_ms);
        self.last_ms = self.last_ms.max(r.sent_at_ms);
        self.projects.insert(session.files.project.clone());
        self.models.insert(r.model.clone());
        self.totals.add(r);
    }
}

/// Every counted request with its session, in send order.
fn requests(sessions: &[SessionOutcome]) -> Vec<(usize, &RequestFigures)> {
    let mut all: Vec<(usize, &RequestFigures)> = sessions
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.requests.iter().map(move |r| (i, r)))
        .collect();
    all.sort_by_key(|(i, r)| (r.sent_at_ms, *i));
    all
}

/// The rows of `view` over `sessions` (already selected), in time order (sessions: by first
/// request). A session counts in each row it has requests in.
pub fn rows(sessions: &[SessionOutcome], view: View, sel: &Selection) -> Vec<Row> {
    let all = requests(sessions);
    let mut keyed: Vec<(String, usize, &RequestFigures)> = Vec::with_capacity(all.len());
    match view {
        View::Blocks => {
            let mut start = 0u64;
            let mut last: Option<u64> = None;
            for (i, r) in all {
                let t = r.sent_at_ms;
                let new = last.is_none_or(|l| t >= start + BLOCK_MS || t - l >= BLOCK_MS);
                if new {
                    start = t - t % 3_600_000;
                }
                last = Some(t);
                keyed.push((format!("{start:020}"), i, r));
            }
        }
        _ => {
            for (i, r) in all {
                let key = match view {
                    View::Daily => sel.day_key(r.sent_at_ms),
                    View::Weekly => sel.week_key(r.sent_at_ms),
                    View::Monthly => sel.month_key(r.sent_at_ms),
                    _ => format!("{:020}\u{0}{}", sessions[i].requests[0].sent_at_ms, i),
                };
                keyed.push((key, i, r));
            }
        }
    }
    let mut out: BTreeMap<String, (Row, BTreeSet<usize>)> = BTreeMap::new();
    for (key, i, r) in keyed {
        let (row, seen) = out.entry(key).or_default();
        if seen.insert(i) {
            row.totals.sessions += 1;
        }
        row.add(&sessions[i], r);
    }
    out.into_iter()
        .map(|(key, (mut row, seen))| {
            row.key = match view {
                View::Blocks => {
                    let start: u64 = key.parse().unwrap_or(0);
                    row.end_ms = start + BLOCK_MS;
                    sel.minute_label(start)
                }
                View::Session => seen
                    .iter()
                    .next()
                    .map_or(key.clone(), |&i| sessions[i].files.session_id.clone()),
                _ => key,
            };
            row
        })
        .collect()
}

/// The totals of every row together.
pub fn total(sessions: &[SessionOutcome]) -> Totals {
    super::aggregate::overall(sessions)
}
