//! A unit-prefix cache's entries, one per unit (keyed by the chained hash of the units from
//! token 0 up to and including it), grouped in runs: the entries one store wrote anew together
//! (contiguous units, one readability time) share a [`Run`] that holds their write time, so
//! that rewriting a whole run that aged out of `max_age` is one change to the run, not one per
//! unit.

use crate::cache::common::{work, HashKeyed};

/// The entries written anew together.
#[derive(Debug, Clone)]
struct Run {
    /// When the run's entries were (last) written anew: `max_age` counts from here.
    written_at: u64,
    /// Bumped each time the whole run is written anew: an entry whose own `gen` is older holds
    /// the run's `reset` values instead of its own.
    gen: u32,
    /// (`visible_at`, `last_used`) the last rewrite of the whole run gave its entries.
    reset: (u64, u64),
    /// A use stamped on every entry of the run at once since its last rewrite (0: none): an
    /// entry's last use is at least this.
    floor: u64,
    /// The latest last use of any of the run's entries since its last rewrite (`floor`
    /// included): once this idled out, every entry of the run has.
    ceil: u64,
    /// Entries that belong to the run (its slots still alive).
    members: u32,
    /// The run last found holding the unit right after this run's last slot (`u32::MAX`:
    /// none yet): tried before the index when a walk leaves the run at its end.
    succ: u32,
    /// Hashes of the run's first and last slots (their entries' keys; slots keep their hash
    /// alive or not), so that a whole run is recognised without reading its slots.
    ends: (u64, u64),
    /// Unit (counted from token 0) of the run's first slot.
    start: usize,
    /// The run's units in order, from `start` (emptied once none is alive).
    slots: Vec<Entry>,
    /// Values of their own for the slots that were given some (see [`Entry::own`]), in the
    /// order they first were: most slots keep the run's `reset` values all their life, so
    /// they take 16 bytes, not 32 (a one-token unit has a slot per token).
    own: Vec<Own>,
}

impl Run {
    /// Frees the slots of a run none of whose entries is alive, and their own values.
    fn free_slots(&mut self) {
        self.slots = Vec::new();
        self.own = Vec::new();
    }
}

/// One unit's entry as stored in its run's slots.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Chained hash of the units from token 0 up to and including this one.
    hash: u64,
    /// Where in its run's `own` the entry's values of its own are ([`NO_OWN`]: it has none,
    /// and holds the run's `reset` values, as an entry does when written: see
    /// [`Entries::join_group`]).
    own: u32,
    /// False once the entry was written anew into another run (the slot is then empty).
    alive: bool,
}

/// [`Entry::own`] of an entry without values of its own.
const NO_OWN: u32 = u32::MAX;

/// An entry's values of its own, once it was refreshed or stamped apart from its run.
#[derive(Debug, Clone, Copy)]
struct Own {
    /// The run's `gen` when the values below were set (older: the run's `reset` holds them).
    gen: u32,
    /// When the entry becomes readable (its build is done).
    visible_at: u64,
    /// Last use stamped on the entry itself; the touches of the stream paths holding it count
    /// too (see `StreamState`).
    last_used: u64,
}

/// Runs that may hold a unit, tried before the index: the run of the unit before it (where it
/// was and where a store put it) or of the path piece holding it; or the knowledge that the
/// unit before it had no entry (then neither has this one: entries are never removed, and a
/// unit's entry is written with every unit before it).
#[derive(Debug, Clone, Copy)]
pub(super) struct Near {
    /// Candidate runs (`u32::MAX`: none).
    runs: [u32; 2],
    /// The unit before had no entry.
    vacant: bool,
}

impl Near {
    /// No candidate: the index is asked.
    pub const NONE: Near = Near {
        runs: [u32::MAX; 2],
        vacant: false,
    };

    /// Whether the unit before had no entry (then neither has this one, nor any after it).
    pub fn vacant(&self) -> bool {
        self.vacant
    }

    /// One candidate run (none when `run` is `None`).
    pub fn of(run: Option<u32>) -> Near {
        Near {
            runs: [run.unwrap_or(u32::MAX), u32::MAX],
            vacant: false,
        }
    }
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

impl Group {
    /// The run being filled.
    pub fn run(&self) -> u32 {
        self.run
    }
}

/// Entries in runs, found from a run near them or by the index.
#[derive(Debug, Default)]
pub(super) struct Entries {
    /// The run holding each entry that cannot be found from the entry before it in the same
    /// run (the first of its run, or its predecessor's slot emptied); may hold stale runs,
    /// checked on use.
    index: HashKeyed<u64, u32>,
    /// Runs by index.
    runs: Vec<Run>,
    /// Slots after an emptied one (run, offset): indexed before the index is next read, when
    /// still alive (most are emptied in turn by the same store).
    pending: Vec<(u32, usize)>,
}

/// The values of slot `e` of `run`.
fn vals(run: &Run, id: u32, e: &Entry) -> Vals {
    let (visible_at, last_used) = match run.own.get(e.own as usize) {
        Some(o) if o.gen == run.gen => (o.visible_at, o.last_used),
        _ => run.reset,
    };
    Vals {
        visible_at,
        written_at: run.written_at,
        last_used: last_used.max(run.floor),
        run: id,
    }
}

/// The expiry rules [`Entries::store_stretch`] applies to entries' own values.
pub(super) struct Rules<E, F> {
    /// Whether an entry written at the first time and last used at the second is expired.
    pub expired: E,
    /// Whether entries written at the first time and last used no earlier than the second
    /// are all unexpired.
    pub fresh: F,
}

/// What [`Entries::store_stretch`] stored.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stretch {
    /// Units stored (0: none; the caller stores the unit alone).
    pub units: usize,
    /// Their run after.
    pub run: u32,
    /// Their bounds (written time, a bound of readability) when they were refreshed; `None`
    /// when written anew (readable from the time given).
    pub refreshed: Option<(u64, u64)>,
}

impl Stretch {
    /// Nothing stored.
    const NONE: Stretch = Stretch {
        units: 0,
        run: u32::MAX,
        refreshed: None,
    };
}

/// Asks the processor to bring the memory at `at` into its cache ahead of use (a hint: it
/// reads nothing into the program and cannot fault, whatever the address).
#[inline(always)]
pub(super) fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it reads nothing into the program and cannot fault.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(at.cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Gives slot `k` of `run` values of its own, (`visible_at`, `last_used`), under the run's
/// current `gen`.
fn set_own(run: &mut Run, k: usize, (visible_at, last_used): (u64, u64)) {
    let own = Own {
        gen: run.gen,
        visible_at,
        last_used,
    };
    let e = &mut run.slots[k];
    match run.own.get_mut(e.own as usize) {
        Some(o) => *o = own,
        None => {
            e.own = run.own.len() as u32;
            run.own.push(own);
        }
    }
}

/// The hash of slot `k` of `run` (the last one's without reading the slots).
fn last_hash(run: &Run, k: usize) -> u64 {
    if k + 1 == run.slots.len() {
        run.ends.1
    } else {
        run.slots[k].hash
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
    /// Whether slot `i` (a unit) of run `id` holds `h`, alive: its offset.
    fn holds(&self, id: u32, h: u64, i: usize) -> Option<usize> {
        let run = self.runs.get(id as usize)?;
        let k = i.checked_sub(run.start)?;
        if k == 0 && run.members as usize == run.slots.len() {
            // Every slot is alive (and there is one: `members` counts them).
            return (run.members > 0 && run.ends.0 == h).then_some(0);
        }
        let e = run.slots.get(k)?;
        (e.alive && e.hash == h).then_some(k)
    }

    /// Indexes the slots waiting for it that are alive with their predecessor gone.
    fn settle(&mut self) {
        for (id, k) in std::mem::take(&mut self.pending) {
            let slots = &self.runs[id as usize].slots;
            if slots.get(k).is_some_and(|e| e.alive) && (k == 0 || !slots[k - 1].alive) {
                self.index.insert(slots[k].hash, id);
            }
        }
    }

    /// Where the entry of unit `i` (hash `h`) is, trying the runs `near` gives first.
    fn find(&mut self, h: u64, i: usize, near: Near) -> Option<(u32, usize)> {
        if near.vacant {
            return None;
        }
        for id in near.runs {
            if let Some(k) = self.holds(id, h, i) {
                return Some((id, k));
            }
        }
        if !self.pending.is_empty() {
            self.settle();
        }
        let id = *self.index.get(&h)?;
        let k = self.holds(id, h, i)?;
        if k == 0 {
            // Remembered by the candidate run that ends right before it, if any.
            for c in near.runs {
                if let Some(run) = self.runs.get_mut(c as usize) {
                    if run.start + run.slots.len() == i {
                        run.succ = id;
                    }
                }
            }
        }
        Some((id, k))
    }

    /// Where to look first for the unit right after run `id`'s last slot.
    fn past(&self, id: u32) -> Near {
        Near {
            runs: [self.runs[id as usize].succ, id],
            vacant: false,
        }
    }

    /// The entry of unit `i` (hash `h`), and `near` for the unit after it.
    pub fn get(&mut self, h: u64, i: usize, near: &mut Near) -> Option<Vals> {
        match self.find(h, i, *near) {
            Some((id, k)) => {
                *near = Near::of(Some(id));
                let run = &self.runs[id as usize];
                Some(vals(run, id, &run.slots[k]))
            }
            None => {
                near.vacant = true;
                None
            }
        }
    }

    /// The entry of unit `i` (the first of `hashes`, the cursor's from unit `i` on) and how
    /// many units from `i` are known to be alive in its run at once: every slot of the run
    /// from it on (up to the cursor's end) alive and holding `hashes`, and `all_live` of the
    /// run's write time and least last use (every entry's is no earlier than its run's write
    /// time and `floor`) saying all are live; 0 when not known so. `near` as for
    /// [`Entries::get`].
    pub fn get_stretch(
        &mut self,
        (i, hashes): (usize, &[u64]),
        near: &mut Near,
        all_live: impl FnOnce(u64, u64) -> bool,
    ) -> Option<(Vals, usize)> {
        let v = self.get(hashes[0], i, near)?;
        let run = &self.runs[v.run as usize];
        let k = i - run.start;
        let m = (run.slots.len() - k).min(hashes.len());
        // Hashes are chained: equal at the stretch's last unit, they are equal at every unit
        // before it.
        let same =
            run.members as usize == run.slots.len() && last_hash(run, k + m - 1) == hashes[m - 1];
        let w = run.written_at;
        let known = same && all_live(w, run.floor.max(w));
        if known && k + m == run.slots.len() {
            *near = self.past(v.run);
        }
        Some((v, if known { m } else { 0 }))
    }

    /// Stamps use `t` on the entry of unit `i` (hash `h`), if any; `near` as for
    /// [`Entries::get`].
    pub fn stamp(&mut self, h: u64, i: usize, near: &mut Near, t: u64) {
        if let Some((id, k)) = self.find(h, i, *near) {
            *near = Near::of(Some(id));
            let run = &mut self.runs[id as usize];
            let v = vals(run, id, &run.slots[k]);
            run.ceil = run.ceil.max(t);
            set_own(run, k, (v.visible_at, v.last_used.max(t)));
        }
    }

    /// The run new entries of unit `i`, written at `at`, join: `group`'s if they continue it,
    /// else a new one (which becomes `group`); the entry of hash `h` is appended to it.
    fn join_group(&mut self, group: &mut Option<Group>, (h, i): (u64, usize), at: u64) -> u32 {
        let id = match *group {
            Some(g) if g.at == at && g.next == i => g.run,
            _ => {
                self.runs.push(Run {
                    written_at: at,
                    gen: 0,
                    reset: (at, at),
                    floor: 0,
                    ceil: at,
                    members: 0,
                    succ: u32::MAX,
                    ends: (h, h),
                    start: i,
                    slots: Vec::new(),
                    own: Vec::new(),
                });
                let id = (self.runs.len() - 1) as u32;
                self.index.insert(h, id);
                id
            }
        };
        *group = Some(Group {
            run: id,
            at,
            next: i + 1,
        });
        let run = &mut self.runs[id as usize];
        run.members += 1;
        run.ceil = run.ceil.max(at);
        run.ends.1 = h;
        run.slots.push(Entry {
            hash: h,
            own: NO_OWN,
            alive: true,
        });
        if run.reset != (at, at) {
            set_own(run, run.slots.len() - 1, (at, at));
        }
        id
    }

    /// [`Entries::join_group`] of the units from `i` with hashes `hashes` (at least one), all
    /// written at `at`: the first joins `group` or starts a run, the others follow it.
    fn join_group_all(
        &mut self,
        group: &mut Option<Group>,
        (i, hashes): (usize, &[u64]),
        at: u64,
    ) -> u32 {
        let id = self.join_group(group, (hashes[0], i), at);
        let m = hashes.len();
        let run = &mut self.runs[id as usize];
        run.members += (m - 1) as u32;
        run.ends.1 = hashes[m - 1];
        let from = run.slots.len();
        run.slots.extend(hashes[1..].iter().map(|&hash| Entry {
            hash,
            own: NO_OWN,
            alive: true,
        }));
        if run.reset != (at, at) {
            for k in from..run.slots.len() {
                set_own(run, k, (at, at));
            }
        }
        *group = Some(Group {
            run: id,
            at,
            next: i + m,
        });
        id
    }

    /// Writes the entries of the units from `i` (hashes `hashes`, at least one), none of
    /// which has one (`near` says the unit before `i` had none: see [`Near`]), readable from
    /// `r`, joining `group`: what [`Entries::store`] does to each, in one step. Returns their
    /// run; `near` stays vacant.
    pub fn write_vacant(
        &mut self,
        (i, hashes): (usize, &[u64]),
        r: u64,
        group: &mut Option<Group>,
        near: &mut Near,
    ) -> u32 {
        debug_assert!(near.vacant, "written past a unit that had an entry");
        let run = self.join_group_all(group, (i, hashes), r);
        *near = Near {
            runs: [run, u32::MAX],
            vacant: true,
        };
        run
    }

    /// Empties slot `k` of run `id` (its entry is written anew elsewhere).
    fn kill(&mut self, id: u32, k: usize) {
        let run = &mut self.runs[id as usize];
        run.slots[k].alive = false;
        run.members -= 1;
        if run.members == 0 {
            run.free_slots();
        } else if k + 1 < run.slots.len() {
            self.pending.push((id, k + 1));
        }
    }

    /// Stores unit `i` (hash `h`), readable from `r`, at `now`: a missing entry is written
    /// (joining `group`); an existing one for which `unexpired` holds is refreshed (readable
    /// from the earlier time, used now); an expired one is written anew in place (joining
    /// `group`) when `in_place` says so, else left for [`Entries::replace`]. `near` as for
    /// [`Entries::get`], updated for the unit after.
    pub fn store(
        &mut self,
        (h, i): (u64, usize),
        (r, now): (u64, u64),
        group: &mut Option<Group>,
        near: &mut Near,
        unexpired: impl FnOnce(&Vals) -> bool,
        in_place: impl FnOnce() -> bool,
    ) -> Stored {
        let Some((id, k)) = self.find(h, i, *near) else {
            let run = self.join_group(group, (h, i), r);
            *near = Near {
                runs: [run, u32::MAX],
                vacant: true,
            };
            return Stored::Written(run);
        };
        let run = &mut self.runs[id as usize];
        let v = vals(run, id, &run.slots[k]);
        if unexpired(&v) {
            run.ceil = run.ceil.max(now);
            let (visible_at, last_used) = (v.visible_at.min(r), v.last_used.max(now));
            set_own(run, k, (visible_at, last_used));
            *near = Near::of(Some(id));
            return Stored::Refreshed(Vals {
                visible_at,
                last_used,
                ..v
            });
        }
        *near = Near::of(Some(id));
        if !in_place() {
            return Stored::Expired;
        }
        self.kill(id, k);
        let run = self.join_group(group, (h, i), r);
        *near = Near {
            runs: [run, id],
            vacant: false,
        };
        Stored::Written(run)
    }

    /// Writes unit `i` (hash `h`) anew, readable from `r`, joining `group`; `near` as for
    /// [`Entries::store`].
    pub fn replace(
        &mut self,
        (h, i): (u64, usize),
        r: u64,
        group: &mut Option<Group>,
        near: &mut Near,
    ) -> u32 {
        let old = self.find(h, i, *near);
        if let Some((id, k)) = old {
            self.kill(id, k);
        }
        let run = self.join_group(group, (h, i), r);
        *near = Near {
            runs: [run, old.map_or(u32::MAX, |(id, _)| id)],
            vacant: old.is_none(),
        };
        run
    }

    /// Stores, in one pass, the stretch of units from `i` (hashes `hashes`, the cursor's from
    /// unit `i` on, none of them on the storing stream's path) that sit alive in consecutive
    /// slots of one run, readable from `r`, at `now`: what [`Entries::store`] (then
    /// [`Entries::replace`]) does unit by unit. A whole run expired by its entries' own values
    /// (`rules.expired` of written time and last use) is written anew in place in one step,
    /// and `group` continues it; a whole run whose entries are all unexpired by their own
    /// values (`rules.fresh` of written time and least last use) is refreshed in one step;
    /// otherwise the leading slots expired by their own values are written anew into `group`,
    /// one by one. Writing asks `free` (no other path holds unit `i`, hence none of the
    /// stretch: hashes are chained) last. `near` as for [`Entries::store`]; `known`, a run and
    /// the unit after it that an earlier stretch found whole over the same cursor's hashes,
    /// unchanged since (see [`Entries::still_whole`]): tried first, without reading `hashes`.
    pub fn store_stretch<E: Fn(u64, u64) -> bool, F: Fn(u64, u64) -> bool>(
        &mut self,
        (i, hashes): (usize, &[u64]),
        (r, now): (u64, u64),
        (group, near): (&mut Option<Group>, &mut Near),
        rules: Rules<E, F>,
        (known, free): (Option<(u32, usize)>, impl FnOnce() -> bool),
    ) -> Stretch {
        let (id, k, whole) = match known.and_then(|c| self.still_whole(c, i, hashes)) {
            Some(n) => (known.map_or(u32::MAX, |c| c.0), 0, Some(n)),
            None => {
                let Some((id, k)) = self.find(hashes[0], i, *near) else {
                    return Stretch::NONE;
                };
                (id, k, self.whole(id, k, hashes))
            }
        };
        work::add(1);
        let Some(n) = whole else {
            return self.rewrite_slots((id, k), (i, hashes), r, (group, near), rules.expired, free);
        };
        let run = &mut self.runs[id as usize];
        if (rules.expired)(run.written_at, run.ceil) {
            if !free() {
                return Stretch::NONE;
            }
            self.rewrite_run(id, r);
            *group = Some(Group {
                run: id,
                at: r,
                next: i + n,
            });
            *near = self.past(id);
            return Stretch {
                units: n,
                run: id,
                refreshed: None,
            };
        }
        // Every entry is readable by `written_at` (at most `r`: refreshing leaves that as
        // is) and last used no earlier than `written_at` and `floor`.
        let w = run.written_at;
        if w <= r && (rules.fresh)(w, run.floor.max(w)) {
            run.floor = run.floor.max(now);
            run.ceil = run.ceil.max(now);
            *near = self.past(id);
            return Stretch {
                units: n,
                run: id,
                refreshed: Some((w, w)),
            };
        }
        self.rewrite_slots((id, k), (i, hashes), r, (group, near), rules.expired, free)
    }

    /// The leading slots of run `id` from slot `k` (unit `i`, hashes `hashes` from it) that
    /// are alive, hold `hashes` and are expired by their own values, written anew into
    /// `group` when `free`: see [`Entries::store_stretch`].
    fn rewrite_slots(
        &mut self,
        (id, k): (u32, usize),
        (i, hashes): (usize, &[u64]),
        r: u64,
        (group, near): (&mut Option<Group>, &mut Near),
        expired: impl Fn(u64, u64) -> bool,
        free: impl FnOnce() -> bool,
    ) -> Stretch {
        let run = &self.runs[id as usize];
        let mut m = 0;
        while let (Some(e), Some(&h)) = (run.slots.get(k + m), hashes.get(m)) {
            let v = vals(run, id, e);
            if !e.alive || e.hash != h || !expired(v.written_at, v.last_used) {
                break;
            }
            m += 1;
        }
        if m == 0 || !free() {
            return Stretch::NONE;
        }
        let new = self.join_group_all(group, (i, &hashes[..m]), r);
        let old = &mut self.runs[id as usize];
        for e in &mut old.slots[k..k + m] {
            e.alive = false;
        }
        old.members -= m as u32;
        if old.members == 0 {
            old.free_slots();
        } else if k + m < old.slots.len() {
            self.pending.push((id, k + m));
        }
        *near = Near {
            runs: [new, id],
            vacant: false,
        };
        Stretch {
            units: m,
            run: new,
            refreshed: None,
        }
    }

    /// The length of run `id` when it starts at unit `i`, ends right before unit `end`, fits in
    /// `hashes` (the cursor's, from unit `i` on) and has every slot alive: for a run an
    /// earlier stretch found whole over the same hashes at the same units, those say it
    /// still is (a run's slots are only ever appended or emptied, never refilled, so with the
    /// same first unit, length and every slot alive it holds the same entries; the caller
    /// vouches that the cursor's hashes before `end` did not change).
    fn still_whole(&self, (id, end): (u32, usize), i: usize, hashes: &[u64]) -> Option<usize> {
        let run = self.runs.get(id as usize)?;
        let n = run.slots.len();
        let whole = run.start == i && n > 0 && run.members as usize == n;
        (whole && i + n == end && n <= hashes.len()).then_some(n)
    }

    /// Asks the processor to bring run `id`'s values (if it is a run) into its cache ahead of
    /// a walk reaching it (a hint: nothing changes).
    pub fn prefetch_run(&self, id: u32) {
        if let Some(run) = self.runs.get(id as usize) {
            let at = (run as *const Run).cast::<u8>();
            prefetch(at);
            prefetch(at.wrapping_add(std::mem::size_of::<Run>() - 1));
        }
    }

    /// When slot `k` of run `id` is its first, every slot is alive and the slots hold the
    /// first of `hashes` (the cursor's, from the slot's unit on): the run's length.
    fn whole(&self, id: u32, k: usize, hashes: &[u64]) -> Option<usize> {
        let run = &self.runs[id as usize];
        let n = run.slots.len();
        let whole = k == 0 && n > 0 && run.members as usize == n && n <= hashes.len();
        // Hashes are chained: equal at the run's last unit, they are equal at every unit
        // before it.
        (whole && run.ends.1 == hashes[n - 1]).then_some(n)
    }

    /// Whether unit `i` is the last slot of run `run`.
    pub fn ends_run(&self, run: u32, i: usize) -> bool {
        let r = &self.runs[run as usize];
        r.start + r.slots.len() == i + 1
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
        run.floor = 0;
        run.ceil = r;
    }

    /// Stamps use `t` on every entry of run `run` when its entries are the `units` given
    /// (one step); returns false, stamping nothing, when the run has other entries.
    pub fn stamp_run(&mut self, run: u32, units: usize, t: u64) -> bool {
        work::add(1);
        let r = &mut self.runs[run as usize];
        if r.members as usize != units {
            return false;
        }
        r.floor = r.floor.max(t);
        r.ceil = r.ceil.max(t);
        true
    }
}
