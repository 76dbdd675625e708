//! The account timeline: which sessions start with the account's leading tools/system block
//! still in the cache.
//!
//! Sessions of one account send the same leading block (tools + system prompt) for a given
//! harness and model, so a session's first request finds it cached when any earlier request of
//! the account refreshed it less than one TTL before. That leading block is the only cache
//! content sessions share (their messages differ), so instead of replaying every request of the
//! account through one cache instance, the timeline decides per session whether the block is
//! alive at its first request; each session is then replayed on its own cache instance with the
//! block pre-written when it is. Replays are thus independent and run in parallel, and a
//! session's figures differ from a lone replay only by that shared block. Only send times and
//! the TTL the harness wrote with are used: never the billed reads or writes.

use std::collections::HashMap;

/// What the timeline needs to know of one session.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Sessions with equal keys share a leading block (harness and model).
    pub key: String,
    /// Send times of all its requests (epoch ms), ascending.
    pub times: Vec<u64>,
    /// How long a request of this session keeps the leading block alive.
    pub ttl_ms: u64,
}

/// Per key: refresh times in order, and at each the latest expiry so far with the session that
/// set it.
type Lives<'a> = HashMap<&'a str, (Vec<u64>, Vec<(u64, usize)>)>;

/// For each session, the index of the session whose request kept the leading block alive at
/// its first request (the latest such refresh), or `None` when it starts cold.
///
/// The block written or read at `t` with TTL `ttl` lives until `t + ttl`; a session starting at
/// `s` finds it when some request of another session was sent strictly before `s` and lives
/// until at least `s`.
pub fn warm_starts(sessions: &[Placement]) -> Vec<Option<usize>> {
    let mut by_key: HashMap<&str, Vec<(u64, u64, usize)>> = HashMap::new();
    for (i, p) in sessions.iter().enumerate() {
        let refreshes = by_key.entry(p.key.as_str()).or_default();
        refreshes.extend(p.times.iter().map(|&t| (t, t.saturating_add(p.ttl_ms), i)));
    }
    // Per key: refreshes in time order with the running latest expiry and who set it.
    let mut lives: Lives = HashMap::new();
    for (key, mut refreshes) in by_key {
        refreshes.sort_unstable();
        let mut best: (u64, usize) = (0, usize::MAX);
        let mut times = Vec::with_capacity(refreshes.len());
        let mut expiry = Vec::with_capacity(refreshes.len());
        for (t, until, who) in refreshes {
            if until >= best.0 {
                best = (until, who);
            }
            times.push(t);
            expiry.push(best);
        }
        lives.insert(key, (times, expiry));
    }
    sessions
        .iter()
        .map(|p| {
            let start = *p.times.first()?;
            let (times, expiry) = lives.get(p.key.as_str())?;
            // Refreshes sent strictly before the session's first request.
            let before = times.partition_point(|&t| t < start);
            let (until, who) = *expiry.get(before.checked_sub(1)?)?;
            (until >= start).then_some(who)
        })
        .collect()
}

/// For each session that starts warm, whether the account keeps its leading block alive for the
/// whole session: the refreshes of every session of its key (its own included) leave no gap
/// longer than their TTL between its first and its last request. Such a session's idle gaps
/// do not expire the block (the `anthropic` model's `prefix_kept_warm`); its messages still do.
pub fn kept_warm(sessions: &[Placement], warm: &[Option<usize>]) -> Vec<bool> {
    let mut by_key: HashMap<&str, Vec<(u64, u64)>> = HashMap::new();
    for p in sessions {
        by_key
            .entry(p.key.as_str())
            .or_default()
            .extend(p.times.iter().map(|&t| (t, t.saturating_add(p.ttl_ms))));
    }
    for v in by_key.values_mut() {
        v.sort_unstable();
    }
    sessions
        .iter()
        .zip(warm)
        .map(|(p, w)| {
            let (Some(_), Some(&start), Some(&end)) = (w, p.times.first(), p.times.last()) else {
                return false;
            };
            let Some(refreshes) = by_key.get(p.key.as_str()) else {
                return false;
            };
            // Sweep the refreshes sent up to the session's last request: the block stays alive
            // while each one is sent before the previous ones expire.
            let mut alive_until = start;
            for &(t, until) in refreshes.iter().take_while(|(t, _)| *t <= end) {
                if until < start {
                    continue;
                }
                if t > alive_until {
                    return false;
                }
                alive_until = alive_until.max(until);
            }
            alive_until >= end
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn at(key: &str, minutes: &[u64], ttl_min: u64) -> Placement {
        Placement {
            key: key.into(),
            times: minutes.iter().map(|m| m * MIN).collect(),
            ttl_ms: ttl_min * MIN,
        }
    }

    #[test]
    fn a_session_starts_warm_only_within_the_ttl_of_an_earlier_refresh() {
        // A: requests at 0 and 10 min (5 m TTL: alive until 15). B starts at 14: warm from A.
        // C starts at 30: B's last request at 20 lives until 25 < 30: cold.
        // D (other model) starts at 16: nothing of its key before: cold.
        let s = [
            at("sonnet", &[0, 10], 5),
            at("sonnet", &[14, 20], 5),
            at("sonnet", &[30], 5),
            at("opus", &[16], 5),
        ];
        assert_eq!(warm_starts(&s), vec![None, Some(0), None, None]);
    }

    #[test]
    fn a_one_hour_refresh_outlives_later_five_minute_ones() {
        // A (1 h) at 0 lives until 60; B (5 m) at 10 lives until 15; C starts at 50: A's block is
        // still alive although the latest refresh (B) expired.
        let s = [at("k", &[0], 60), at("k", &[10], 5), at("k", &[50], 5)];
        assert_eq!(warm_starts(&s), vec![None, Some(0), Some(0)]);
    }

    #[test]
    fn other_sessions_keep_the_block_alive_through_a_session_s_idle_gap() {
        // A (5 m) sends at 0, 4, 8, 12, 16 min: the block lives without a gap until 21.
        // B starts at 2 (warm from A) and sends again at 19 after a 17 min idle gap: A's
        // refreshes bridge it: kept warm. C starts at 3 and sends again at 30: nothing refreshes
        // the block between 21 and 30: not kept (it starts warm from B, whose request at 2 lives
        // longest, until 7). D starts cold at 60: never kept.
        let s = [
            at("k", &[0, 4, 8, 12, 16], 5),
            at("k", &[2, 19], 5),
            at("k", &[3, 30], 5),
            at("k", &[60, 61], 5),
        ];
        let warm = warm_starts(&s);
        assert_eq!(warm, vec![None, Some(0), Some(1), None]);
        assert_eq!(kept_warm(&s, &warm), vec![false, true, false, false]);
    }

    #[test]
    fn concurrent_starts_do_not_warm_each_other() {
        // Two sessions whose first requests are sent at the same instant: neither was written
        // before the other was sent.
        let s = [at("k", &[5, 6], 5), at("k", &[5], 5)];
        assert_eq!(warm_starts(&s), vec![None, None]);
    }
}
