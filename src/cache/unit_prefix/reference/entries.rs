//! A unit-prefix cache's entries, one per unit (keyed by the chained hash of the units from
//! token 0 up to and including it), grouped in runs: the entries one store wrote anew together
//! (contiguous units, one readability time) share a [`Run`] that holds their write time, so
//! that rewriting a whole run that aged out of `max_age` is one change to the run, not one per
//! unit.

use std::collections::hash_map::Entry as Slot;

use crate::cache::common::{work, HashKeyed};

/// The entries written anew together.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// When the run's entries were (last) written anew: `max_age` counts from here.
    written_at: u64,
    /// Bumped each time the whole run is written anew: an entry whose own `gen` is older holds
    /// the run's `reset` values instead of its own.
    gen: u32,
    /// (`visible_at`, `last_used`) the last rewrite of the whole run gave its entries.
    reset: (u64, u64),
    /// Entries that belong to the run.
    members: u32,
}

/// One unit's entry as stored: its run and its own values.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Index of the entry's run.
    run: u32,
    /// The run's `gen` when the values below were set (older: the run's `reset` holds them).
    gen: u32,
    /// When the entry becomes readable (its build is done).
    visible_at: u64,
    /// Last use stamped on the entry itself; the touches of the stream paths holding it count
    /// too (see `StreamState`).
    last_used: u64,
}

/// An entry's values as the cache's rules read them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Vals {
    /// When the entry becomes readable.
    pub visible_at: u64,
    /// When it was (last) written anew.
    pub written_at: u64,
    /// Its own last use (without the touches of the paths holding it).
    pub last_used: u64,
    /// Its run.
    pub run: u32,
}

/// A run being filled by one store: new entries at contiguous units with one readability time
/// join it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Group {
    /// The run.
    run: u32,
    /// Readability (and write) time of its entries.
    at: u64,
    /// The unit the next entry must be at to join it.
    next: usize,
}

/// Entries by unit hash, and their runs.
#[derive(Debug, Default)]
pub(super) struct Entries {
    /// Entries by chained hash of the units from token 0 up to and including theirs.
    units: HashKeyed<u64, Entry>,
    /// Runs by index.
    runs: Vec<Run>,
}

/// The values of `e`, whose run is in `runs`.
fn vals(runs: &[Run], e: &Entry) -> Vals {
    let run = &runs[e.run as usize];
    let (visible_at, last_used) = if e.gen == run.gen {
        (e.visible_at, e.last_used)
    } else {
        run.reset
    };
    Vals {
        visible_at,
        written_at: run.written_at,
        last_used,
        run: e.run,
    }
}

/// The run new entries of unit `i`, written at `at`, join: `group`'s if they continue it,
/// else a new one (which becomes `group`). Counts the member.
fn join_group(runs: &mut Vec<Run>, group: &mut Option<Group>, i: usize, at: u64) -> u32 {
    let run = match *group {
        Some(g) if g.at == at && g.next == i => g.run,
        _ => {
            runs.push(Run {
                written_at: at,
                gen: 0,
                reset: (at, at),
                members: 0,
            });
            (runs.len() - 1) as u32
        }
    };
    *group = Some(Group {
        run,
        at,
        next: i + 1,
    });
    runs[run as usize].members += 1;
    run
}

/// A new entry of `run`, readable and used at `at`.
fn anew(runs: &[Run], run: u32, at: u64) -> Entry {
    Entry {
        run,
        gen: runs[run as usize].gen,
        visible_at: at,
        last_used: at,
    }
}

/// What [`Entries::store`] found at a unit.
pub(super) enum Stored {
    /// The entry was missing or written anew in place, now of this run.
    Written(u32),
    /// The entry is unexpired (as `keep` said): refreshed; its values after.
    Refreshed(Vals),
    /// The entry is expired and `keep` said not to write it in place: untouched.
    Expired,
}

impl Entries {
    /// The entry of unit hash `h`.
    pub fn get(&self, h: u64) -> Option<Vals> {
        self.units.get(&h).map(|e| vals(&self.runs, e))
    }

    /// Stamps use `t` on the entry of `h`, if any.
    pub fn stamp(&mut self, h: u64, t: u64) {
        if let Some(e) = self.units.get_mut(&h) {
            let v = vals(&self.runs, e);
            *e = Entry {
                run: e.run,
                gen: self.runs[e.run as usize].gen,
                visible_at: v.visible_at,
                last_used: v.last_used.max(t),
            };
        }
    }

    /// Stores unit `i` (hash `h`), readable from `r`, at `now`: a missing entry is written
    /// (joining `group`); an existing one for which `unexpired` holds is refreshed (readable
    /// from the earlier time, used now); an expired one is written anew in place (joining
    /// `group`) when `in_place` says so, else left for [`Entries::replace`].
    pub fn store(
        &mut self,
        (h, i): (u64, usize),
        (r, now): (u64, u64),
        group: &mut Option<Group>,
        unexpired: impl FnOnce(&Vals) -> bool,
        in_place: impl FnOnce() -> bool,
    ) -> Stored {
        // One probe for a missing or an unexpired entry (or an expired one written in place).
        match self.units.entry(h) {
            Slot::Vacant(v) => {
                let run = join_group(&mut self.runs, group, i, r);
                v.insert(anew(&self.runs, run, r));
                Stored::Written(run)
            }
            Slot::Occupied(mut o) => {
                let e = o.get_mut();
                let v = vals(&self.runs, e);
                if unexpired(&v) {
                    e.gen = self.runs[e.run as usize].gen;
                    e.visible_at = v.visible_at.min(r);
                    e.last_used = v.last_used.max(now);
                    return Stored::Refreshed(Vals {
                        visible_at: e.visible_at,
                        last_used: e.last_used,
                        ..v
                    });
                }
                if !in_place() {
                    return Stored::Expired;
                }
                self.runs[e.run as usize].members -= 1;
                let run = join_group(&mut self.runs, group, i, r);
                *e = anew(&self.runs, run, r);
                Stored::Written(run)
            }
        }
    }

    /// Writes unit `i` (hash `h`) anew, readable from `r`, joining `group`.
    pub fn replace(&mut self, (h, i): (u64, usize), r: u64, group: &mut Option<Group>) -> u32 {
        let run = join_group(&mut self.runs, group, i, r);
        if let Some(old) = self.units.insert(h, anew(&self.runs, run, r)) {
            self.runs[old.run as usize].members -= 1;
        }
        run
    }

    /// When run `run`'s entries were written anew, and whether they are all of it: the run's
    /// entry count is `units`.
    pub fn run_written(&self, run: u32, units: usize) -> (u64, bool) {
        work::add(1);
        let r = &self.runs[run as usize];
        (r.written_at, r.members as usize == units)
    }

    /// Writes every entry of run `run` anew, readable and used from `r`.
    pub fn rewrite_run(&mut self, run: u32, r: u64) {
        let run = &mut self.runs[run as usize];
        run.written_at = r;
        run.gen = run.gen.wrapping_add(1);
        run.reset = (r, r);
    }
}
