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
    fn concurrent_starts_do_not_warm_each_other() {
        // Two sessions whose first requests are sent at the same instant: neither was written
        // before the other was sent.
        let s = [at("k", &[5, 6], 5), at("k", &[5], 5)];
        assert_eq!(warm_starts(&s), vec![None, None]);
    }
}
