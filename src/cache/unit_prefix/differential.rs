//! The unit-prefix cache against its previous implementation (`reference.rs`, kept for tests
//! only): generated request sequences fed to both must give identical outcomes, request by
//! request, under the `gemini` and `deepseek` defaults and configurations that make entries
//! idle out, age out and be built slowly within a few requests.

use std::sync::Arc;
use std::time::Duration;

use super::reference::UnitPrefixCache as Reference;
use super::{UnitPrefixCache, UnitPrefixConfig};
use crate::cache::{CacheModel, PriceTable};
use crate::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `pct` percent.
    fn pct(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// A stream's state in a generated sequence.
struct Conv {
    /// Name of the stream.
    name: String,
    /// Its tools and system segments.
    head: Vec<Arc<Segment>>,
    /// Its messages.
    messages: Vec<Arc<Segment>>,
    /// Index of its model in [`MODELS`].
    model: usize,
    /// Its clock (ms).
    clock: u64,
}

/// The models the streams switch between.
const MODELS: [&str; 2] = ["gemini-2.5-pro", "gemini-2.5-flash"];

/// Segment factory with fresh ids.
struct Maker(u64);

impl Maker {
    fn seg(&mut self, level: Level, len: u64) -> Arc<Segment> {
        self.0 += 1;
        let id = self.0;
        let kind = match level {
            Level::Tools => SegmentKind::Tool,
            Level::System => SegmentKind::System,
            _ => SegmentKind::Message(Role::User),
        };
        Arc::new(Segment {
            id,
            level,
            kind,
            label: format!("s{id}"),
            tokens: (0..len as u32).map(|i| (id as u32) << 14 | i).collect(),
            breakpoint: None,
        })
    }
}

/// A gap (ms) before the next request, around `config`'s lifetimes.
fn gap(rng: &mut Rng, config: &UnitPrefixConfig) -> u64 {
    let idle = config.idle_ttl.as_millis() as u64;
    let max_age = config.max_age.as_millis() as u64;
    match rng.below(10) {
        0..=2 => rng.below(3_000),
        3 => rng.below(idle / 2 + 1),
        4 => (idle + rng.below(3)).saturating_sub(1),
        5 => idle + 1 + rng.below(idle + 1),
        6 => max_age / 3 + rng.below(max_age / 3 + 1),
        7 => (max_age + rng.below(3)).saturating_sub(1),
        8 => max_age + rng.below(2 * max_age + 1),
        _ => 0,
    }
}

/// Changes stream `c`'s conversation before its next request.
fn change(rng: &mut Rng, make: &mut Maker, c: &mut Conv, tools: &[Arc<Segment>]) {
    match rng.below(16) {
        0 => c.head[0] = make.seg(Level::Tools, 50 + rng.below(300)),
        1 => c.head = tools.to_vec(),
        2 => c.messages.clear(),
        3 => c.model = 1 - c.model,
        4 | 5 if !c.messages.is_empty() => {
            let i = rng.below(c.messages.len() as u64) as usize;
            c.messages[i] = make.seg(Level::Messages, 1 + rng.below(200));
        }
        6 | 7 if !c.messages.is_empty() => {
            let keep = rng.below(c.messages.len() as u64) as usize;
            c.messages.truncate(keep);
        }
        _ => {}
    }
    let len = if rng.pct(20) {
        1 + rng.below(5)
    } else {
        1 + rng.below(600)
    };
    c.messages.push(make.seg(Level::Messages, len));
}

/// A generated sequence of requests under `config`, with each one's (visible, completed)
/// times.
fn sequence(seed: u64, config: &UnitPrefixConfig, steps: usize) -> Vec<(Request, u64, u64)> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut make = Maker(0);
    let tools: Vec<Arc<Segment>> = (0..3)
        .map(|k| make.seg(Level::Tools, 200 + 300 * k))
        .collect();
    let system = make.seg(Level::System, 900);
    let mut convs: Vec<Conv> = (0..3)
        .map(|k| Conv {
            name: if k == 0 {
                "main".into()
            } else {
                format!("agent-{k}")
            },
            head: tools.iter().cloned().chain([system.clone()]).collect(),
            messages: Vec::new(),
            model: 0,
            clock: k as u64 * 700,
        })
        .collect();
    let mut out = Vec::new();
    for index in 0..steps {
        let k = [0, 0, 0, 1, 1, 2][rng.below(6) as usize];
        let c = &mut convs[k];
        change(&mut rng, &mut make, c, &tools);
        c.clock += gap(&mut rng, config);
        let back = if rng.pct(10) {
            rng.below(config.idle_ttl.as_millis() as u64 * 2)
        } else {
            0
        };
        let at = c.clock.saturating_sub(back);
        let visible = at + rng.below(4_000);
        let done = visible + rng.below(15_000);
        let reply = make.seg(Level::Messages, rng.below(300));
        let visible_len = reply.tokens.len() as u64;
        let output_tokens = if rng.pct(25) {
            visible_len + 1 + rng.below(50)
        } else {
            visible_len
        };
        let req = Request {
            index,
            stream: c.name.clone(),
            step: index,
            model: MODELS[c.model].into(),
            sent_at_ms: at,
            segments: c.head.iter().chain(&c.messages).cloned().collect(),
            settings: RequestSettings::default(),
            reply: vec![reply.clone()],
            output_tokens,
        };
        out.push((req, visible, done));
        if rng.pct(70) {
            c.messages.push(reply);
        }
        if rng.pct(85) {
            c.clock = done;
        }
    }
    out
}

/// The configurations compared: the providers' defaults and short lifetimes in several units.
fn configs() -> Vec<UnitPrefixConfig> {
    let secs = Duration::from_secs;
    let short = |unit, min, idle, max_age, build, cache_reply| UnitPrefixConfig {
        unit,
        min_tokens: min,
        idle_ttl: secs(idle),
        max_age: secs(max_age),
        cache_reply,
        build_delay: Duration::from_millis(build),
    };
    vec![
        crate::cache::gemini::implicit_config(),
        crate::cache::deepseek::default_config(),
        short(1, Some(1), 10, 30, 0, true),
        short(1, None, 60, 300, 1_000, false),
        short(3, Some(5), 20, 60, 2_000, true),
        short(64, None, 300, 3_600, 5_000, false),
        short(7, Some(100), 15, 40, 0, false),
    ]
}

/// Feeds `seq` to both implementations under `config` and compares every outcome.
fn compare(config: &UnitPrefixConfig, seq: &[(Request, u64, u64)], what: &str) {
    let prices = PriceTable::bundled();
    let mut new = UnitPrefixCache::new("gemini", config.clone(), &prices);
    let mut old = Reference::new("gemini", config.clone(), &prices);
    for (k, (req, visible, done)) in seq.iter().enumerate() {
        let a = new.lookup(req);
        let b = old.lookup(req);
        assert_eq!(a, b, "{what}: request {k} of {}", seq.len());
        new.store(req, &a, *visible, *done);
        old.store(req, &b, *visible, *done);
    }
}

#[test]
fn outcomes_are_those_of_the_previous_implementation() {
    let cases: u64 = std::env::var("PLANCACHE_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    for (c, config) in configs().iter().enumerate() {
        for seed in 0..cases {
            let steps = 10 + (seed % 5) as usize * 12;
            let seq = sequence(seed * 31 + c as u64, config, steps);
            compare(config, &seq, &format!("config {c}, seed {seed}"));
        }
    }
}

/// A long steady state past `idle_ttl` (the shape of a long session's end): the main stream
/// grows by a message a request and comes back a little more than `idle_ttl` after its last
/// request, whose response began most of `idle_ttl` after it was sent (slow prefill), so
/// the entries one store wrote anew idle out before the next request while those it
/// refreshed do not; a side stream sharing the head now and then keeps a prefix alive.
fn steady(seed: u64, config: &UnitPrefixConfig, steps: usize) -> Vec<(Request, u64, u64)> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut make = Maker(0);
    let idle = config.idle_ttl.as_millis() as u64;
    let head = [make.seg(Level::Tools, 400), make.seg(Level::System, 700)];
    let mut messages: Vec<Arc<Segment>> = Vec::new();
    let (mut clock, mut out) = (0, Vec::new());
    for index in 0..steps {
        let side = rng.pct(15);
        let (stream, segments) = if side {
            let ask = make.seg(Level::Messages, 1 + rng.below(50));
            ("side", head.iter().cloned().chain([ask]).collect())
        } else {
            messages.push(make.seg(Level::Messages, 1 + rng.below(400)));
            ("main", head.iter().chain(&messages).cloned().collect())
        };
        clock += match rng.below(6) {
            0 => rng.below(idle / 3 + 1),
            _ => idle + 1 + rng.below(idle / 5 + 1),
        };
        let visible = clock + idle * 4 / 5 + rng.below(idle / 10 + 1);
        let req = Request {
            index,
            stream: stream.into(),
            step: index,
            model: MODELS[0].into(),
            sent_at_ms: clock,
            segments,
            settings: RequestSettings::default(),
            reply: vec![make.seg(Level::Messages, rng.below(100))],
            output_tokens: 0,
        };
        out.push((req, visible, visible + rng.below(5_000)));
    }
    out
}

#[test]
fn a_long_idle_expired_steady_state_has_the_previous_outcomes() {
    let cases: u64 = std::env::var("PLANCACHE_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
        / 4
        + 2;
    for (c, config) in configs().iter().enumerate() {
        for seed in 0..cases {
            let seq = steady(seed * 37 + c as u64, config, 60 + (seed % 3) as usize * 30);
            compare(config, &seq, &format!("steady: config {c}, seed {seed}"));
        }
    }
}

/// A store that comes more than `idle_ttl` after the stream's previous one leaves the units it
/// walked off the path (which keeps what its lookup read): a request within `idle_ttl` of it
/// still reads them all, the walked ones through their own last use.
#[test]
fn units_walked_after_a_long_gap_are_read_by_the_next_request() {
    let config = &configs()[2];
    assert_eq!(config.idle_ttl, Duration::from_secs(10));
    let mut make = Maker(0);
    let head = [make.seg(Level::Tools, 400), make.seg(Level::System, 100)];
    let mut messages = Vec::new();
    // (sent, visible, done): the first answer becomes visible 9 s after it was sent; the
    // second request comes 11 s after the first, the third 9.5 s after the second.
    let times = [
        (0, 9_000, 9_500),
        (11_000, 11_500, 12_000),
        (20_500, 21_000, 21_500),
    ];
    let seq: Vec<_> = times
        .iter()
        .enumerate()
        .map(|(index, &(sent, visible, done))| {
            messages.push(make.seg(Level::Messages, 50));
            let req = Request {
                index,
                stream: "main".into(),
                step: index,
                model: MODELS[0].into(),
                sent_at_ms: sent,
                segments: head.iter().chain(&messages).cloned().collect(),
                settings: RequestSettings::default(),
                reply: vec![make.seg(Level::Messages, 20)],
                output_tokens: 0,
            };
            (req, visible, done)
        })
        .collect();
    compare(config, &seq, "long gap, then a short one");
    let prices = PriceTable::bundled();
    let mut cache = UnitPrefixCache::new("gemini", config.clone(), &prices);
    let cached: Vec<u64> = seq
        .iter()
        .map(|(req, visible, done)| {
            let outcome = cache.lookup(req);
            cache.store(req, &outcome, *visible, *done);
            outcome.cached_tokens
        })
        .collect();
    // The second reads the first prompt (550 tokens: readable from 9 s, so not idle at
    // 11 s); the third reads the whole second prompt (600): the first 550 through the path's
    // touch at 11 s, the last 50 written by the second store and used from 11.5 s.
    assert_eq!(cached, vec![0, 550, 600]);
}
