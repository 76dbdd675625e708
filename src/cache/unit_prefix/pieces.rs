//! A stream's path over a unit-prefix cache's entries, in pieces: each piece is a stretch of
//! the path's units whose entries all belong to one run (see `entries.rs`), so that the walks
//! over the path (what may have aged out, what may not be readable yet) and the rewrite of a
//! run that aged out cost one step per piece, not per unit.

use crate::cache::common::work;

/// (`written_at`, an upper bound of `visible_at`) of each piece of a stream's path, in a
/// segment tree of (earliest write, latest visibility), so that a walk over the path jumps
/// straight to the next piece that may have aged out or may not be readable yet.
#[derive(Debug, Default)]
struct PathBounds {
    /// Positions held (the path's pieces).
    len: usize,
    /// Leaves start at `cap` (a power of two); node `k` joins nodes `2k` and `2k + 1`.
    cap: usize,
    /// The tree, `2 * cap` nodes.
    nodes: Vec<(u64, u64)>,
}

/// A leaf past the end: never needs a look.
pub(super) const NO_BOUNDS: (u64, u64) = (u64::MAX, 0);

/// The bounds of two pieces together.
pub(super) fn join(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    (a.0.min(b.0), a.1.max(b.1))
}

impl PathBounds {
    /// Pushes every bound of `vs`, joining the nodes above them once per level (not once per
    /// bound).
    fn extend(&mut self, vs: impl ExactSizeIterator<Item = (u64, u64)>) {
        let n = vs.len();
        if n == 0 {
            return;
        }
        if self.len + n > self.cap {
            let mut cap = self.cap.max(64);
            while cap < self.len + n {
                cap *= 2;
            }
            let mut nodes = vec![NO_BOUNDS; 2 * cap];
            nodes[cap..cap + self.len].copy_from_slice(&self.nodes[self.cap..self.cap + self.len]);
            for k in (1..cap).rev() {
                nodes[k] = join(nodes[2 * k], nodes[2 * k + 1]);
            }
            work::add(cap as u64);
            self.cap = cap;
            self.nodes = nodes;
        }
        let (from, to) = (self.len, self.len + n);
        for (i, v) in (from..to).zip(vs) {
            self.nodes[self.cap + i] = v;
        }
        self.len = to;
        self.rejoin(from, to);
    }

    /// The bounds at position `i`.
    fn leaf(&self, i: usize) -> (u64, u64) {
        work::add(1);
        self.nodes[self.cap + i]
    }

    /// Joins again the nodes above leaves `from..to` (not empty), once per level.
    fn rejoin(&mut self, from: usize, to: usize) {
        let (mut lo, mut hi) = ((self.cap + from) / 2, (self.cap + to - 1) / 2);
        while lo >= 1 {
            for k in lo..=hi {
                self.nodes[k] = join(self.nodes[2 * k], self.nodes[2 * k + 1]);
            }
            work::add((hi - lo + 1) as u64);
            if lo == 1 {
                break;
            }
            lo /= 2;
            hi /= 2;
        }
    }

    fn set(&mut self, i: usize, v: (u64, u64)) {
        let mut k = self.cap + i;
        self.nodes[k] = v;
        while k > 1 {
            k /= 2;
            self.nodes[k] = join(self.nodes[2 * k], self.nodes[2 * k + 1]);
            work::add(1);
        }
    }

    fn truncate(&mut self, n: usize) {
        if self.len > n {
            let to = self.len;
            self.nodes[self.cap + n..self.cap + to].fill(NO_BOUNDS);
            self.len = n;
            self.rejoin(n, to);
        }
    }

    /// The first position from `from` on whose bounds `look` says need a look (`look` of a
    /// join must hold when it holds for either part).
    fn first_from(&self, from: usize, look: &impl Fn((u64, u64)) -> bool) -> Option<usize> {
        (from < self.len)
            .then(|| self.find(1, (0, self.cap), from, look))
            .flatten()
            .filter(|&i| i < self.len)
    }

    fn find(
        &self,
        k: usize,
        (lo, hi): (usize, usize),
        from: usize,
        look: &impl Fn((u64, u64)) -> bool,
    ) -> Option<usize> {
        if hi <= from || !look(self.nodes[k]) {
            return None;
        }
        work::add(1);
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.find(2 * k, (lo, mid), from, look)
            .or_else(|| self.find(2 * k + 1, (mid, hi), from, look))
    }
}

/// `n` consecutive units whose entries have the same bounds and run: `(n, bounds, run)`.
pub(super) type Span = (usize, (u64, u64), u32);

/// Appends a unit with entry bounds `b` and run `run` to `spans`.
pub(super) fn push_unit(spans: &mut Vec<Span>, b: (u64, u64), run: u32) {
    match spans.last_mut() {
        Some((n, lb, lr)) if *lb == b && *lr == run => *n += 1,
        _ => spans.push((1, b, run)),
    }
}

/// Appends `n` units of bounds `b` and run `run` to `spans`.
pub(super) fn push_units(spans: &mut Vec<Span>, n: usize, b: (u64, u64), run: u32) {
    match spans.last_mut() {
        Some((k, lb, lr)) if *lb == b && *lr == run => *k += n,
        _ => spans.push((n, b, run)),
    }
}

/// The units of `spans` past the first `skip`, at most `take` of them.
pub(super) fn units_of(
    spans: &[Span],
    skip: usize,
    take: usize,
) -> impl Iterator<Item = Span> + '_ {
    let (mut skip, mut take) = (skip, take);
    spans.iter().filter_map(move |&(n, b, run)| {
        let drop = skip.min(n);
        skip -= drop;
        let keep = (n - drop).min(take);
        take -= keep;
        (keep > 0).then_some((keep, b, run))
    })
}

/// The pieces of a stream's path.
#[derive(Debug, Default)]
pub(super) struct Pieces {
    /// End (exclusive, in units) of each piece, increasing; the last is the path's length.
    ends: Vec<usize>,
    /// The run all entries of each piece belong to.
    runs: Vec<u32>,
    /// (`written_at`, a bound of `visible_at`) of each piece's entries.
    bounds: PathBounds,
    /// A buffer kept between calls: the bounds of the pieces [`Pieces::extend`] adds.
    added: Vec<(u64, u64)>,
}

impl Pieces {
    /// Units held.
    pub fn units(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Units of piece `k`, and its run.
    pub fn piece(&self, k: usize) -> (std::ops::Range<usize>, u32) {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        (start..self.ends[k], self.runs[k])
    }

    /// The run of the piece holding unit `i`, if the path holds it.
    pub fn run_of(&self, i: usize) -> Option<u32> {
        let k = self.ends.partition_point(|&e| e <= i);
        self.runs.get(k).copied()
    }

    /// The pieces over units `range` (within the path), cut to it, with their runs.
    pub fn spans(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (std::ops::Range<usize>, u32)> + '_ {
        let first = self.ends.partition_point(|&e| e <= range.start);
        (first..self.ends.len())
            .map(move |k| self.piece(k))
            .take_while(move |(units, _)| units.start < range.end)
            .map(move |(units, run)| (units.start.max(range.start)..units.end.min(range.end), run))
    }

    /// Sets the run and bounds of piece `k` (its entries were written anew or refreshed).
    pub fn set(&mut self, k: usize, run: u32, bounds: (u64, u64)) {
        self.runs[k] = run;
        self.bounds.set(k, bounds);
    }

    /// The first piece from `k` on whose bounds `look` says need a look (see
    /// [`PathBounds::first_from`]).
    pub fn first_from(&self, k: usize, look: &impl Fn((u64, u64)) -> bool) -> Option<usize> {
        self.bounds.first_from(k, look)
    }

    /// Keeps the leading `n` units (the piece holding unit `n - 1` ends there).
    pub fn truncate(&mut self, n: usize) {
        if n >= self.units() {
            return;
        }
        work::add(1);
        let keep = if n == 0 {
            0
        } else {
            self.ends.partition_point(|&e| e < n) + 1
        };
        self.ends.truncate(keep);
        self.runs.truncate(keep);
        self.bounds.truncate(keep);
        if let Some(last) = self.ends.last_mut() {
            *last = n;
        }
    }

    /// Appends units, given as spans of `n` consecutive units with the same entry bounds and
    /// run, `(n, bounds, run)`: consecutive units of one run make one piece, which continues
    /// the last piece when that is of the same run.
    pub fn extend(&mut self, spans: impl Iterator<Item = Span>) {
        let old = self.ends.len();
        let mut pos = self.units();
        let mut onto_last: Option<(u64, u64)> = None;
        let mut new = std::mem::take(&mut self.added);
        new.clear();
        for (n, b, run) in spans {
            pos += n;
            if self.runs.last() == Some(&run) {
                *self.ends.last_mut().expect("a piece") = pos;
                match new.last_mut() {
                    Some(n) => *n = join(*n, b),
                    None => onto_last = Some(join(onto_last.unwrap_or(NO_BOUNDS), b)),
                }
            } else {
                self.ends.push(pos);
                self.runs.push(run);
                new.push(b);
            }
        }
        if let Some(onto_last) = onto_last {
            let last = old - 1;
            let b = join(self.bounds.leaf(last), onto_last);
            self.bounds.set(last, b);
        }
        self.bounds.extend(new.drain(..));
        self.added = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units given one by one, as spans of one.
    fn ones(units: &[((u64, u64), u32)]) -> impl Iterator<Item = Span> + '_ {
        units.iter().map(|&(b, run)| (1, b, run))
    }

    #[test]
    fn spans_are_cut_to_the_units_asked_for() {
        let mut spans = Vec::new();
        for (b, run) in [
            ((1, 1), 1),
            ((1, 1), 1),
            ((1, 2), 1),
            ((1, 2), 1),
            ((3, 3), 2),
        ] {
            push_unit(&mut spans, b, run);
        }
        assert_eq!(spans, vec![(2, (1, 1), 1), (2, (1, 2), 1), (1, (3, 3), 2)]);
        let cut: Vec<Span> = units_of(&spans, 1, 3).collect();
        assert_eq!(cut, vec![(1, (1, 1), 1), (2, (1, 2), 1)]);
    }

    fn units(p: &Pieces) -> Vec<(std::ops::Range<usize>, u32)> {
        (0..p.ends.len()).map(|k| p.piece(k)).collect()
    }

    #[test]
    fn units_of_one_run_make_one_piece_and_continue_the_last() {
        let mut p = Pieces::default();
        p.extend(ones(&[((5, 5), 1), ((5, 6), 1), ((7, 7), 2)]));
        assert_eq!(units(&p), vec![(0..2, 1), (2..3, 2)]);
        p.extend(ones(&[((7, 9), 2), ((3, 3), 4)]));
        assert_eq!(units(&p), vec![(0..2, 1), (2..4, 2), (4..5, 4)]);
        assert_eq!(p.units(), 5);
        // The continued piece's bounds joined the new unit's: it needs a look for units
        // readable after 8, the first piece does not.
        assert_eq!(p.first_from(0, &|(_, v)| v > 8), Some(1));
        assert_eq!(p.first_from(0, &|(w, _)| w < 4), Some(2));
        assert_eq!(p.first_from(0, &|(_, v)| v > 100), None);
    }

    #[test]
    fn truncating_ends_the_piece_that_holds_the_last_unit_kept() {
        let mut p = Pieces::default();
        p.extend(ones(&[
            ((1, 1), 1),
            ((1, 1), 1),
            ((2, 2), 2),
            ((2, 2), 2),
            ((3, 3), 3),
        ]));
        p.truncate(3);
        assert_eq!(units(&p), vec![(0..2, 1), (2..3, 2)]);
        assert_eq!(p.first_from(0, &|(_, v)| v >= 3), None);
        p.truncate(2);
        assert_eq!(units(&p), vec![(0..2, 1)]);
        p.truncate(9);
        assert_eq!(p.units(), 2);
        p.truncate(0);
        assert_eq!(p.units(), 0);
        assert_eq!(p.first_from(0, &|_| true), None);
    }
}
