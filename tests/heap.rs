//! `util::heap::keep_freed_memory`: memory a replay frees is taken again by the next without
//! going back to the kernel (its own test binary: the setting is process-wide). glibc on Linux
//! only, where the setting does anything.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::sync::Arc;

use plancache::cache::{self, PriceTable};
use plancache::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind};

/// Minor page faults of the calling thread so far.
fn minor_faults() -> i64 {
    // SAFETY: getrusage writes the struct it is given; a zeroed one is a valid start.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut usage), 0);
        usage.ru_minflt
    }
}

/// A chat of 150 requests, each adding a 1,000-token turn (150,000 tokens at the end).
fn chat() -> Vec<Request> {
    let turns: Vec<Arc<Segment>> = (0..150u32)
        .map(|n| {
            Arc::new(Segment {
                id: u64::from(n),
                level: Level::Messages,
                kind: SegmentKind::Message(Role::User),
                label: format!("turn {n}"),
                tokens: (0..1_000).map(|i| n << 12 | i).collect(),
                breakpoint: None,
            })
        })
        .collect();
    (0..turns.len())
        .map(|n| Request {
            index: n,
            stream: "main".into(),
            step: n,
            model: "gemini-2.5-pro".into(),
            sent_at_ms: n as u64 * 10_000,
            segments: turns[..=n].to_vec(),
            settings: RequestSettings::default(),
            reply: Vec::new(),
            output_tokens: 0,
        })
        .collect()
}

/// One replay of `requests` under `gemini` (a hash and an entry per token), from a new model.
fn replay(requests: &[Request], prices: &PriceTable) -> u64 {
    let mut model = cache::build("gemini", prices).expect("a registered model");
    let mut cached = 0;
    for r in requests {
        let outcome = model.lookup(r);
        cached += outcome.cached_tokens;
        model.store(r, &outcome, r.sent_at_ms + 1_000, r.sent_at_ms + 2_000);
    }
    cached
}

/// Under glibc's defaults the third replay faulted in 886 pages again (the memory the others
/// freed handed back to the kernel); kept, it faults in almost none.
#[test]
fn a_later_replay_reuses_the_memory_an_earlier_one_freed() {
    plancache::util::heap::keep_freed_memory();
    let (requests, prices) = (chat(), PriceTable::bundled());
    let cached = replay(&requests, &prices);
    assert_eq!(replay(&requests, &prices), cached);
    let before = minor_faults();
    assert_eq!(replay(&requests, &prices), cached);
    let faults = minor_faults() - before;
    assert!(
        faults < 200,
        "{faults} page faults in a replay after two others"
    );
}
