//! The incremental paths of the cache models change nothing: every model remembers per stream
//! what it derived from the previous request (hashes, block chains, tree positions, walks of its
//! explanation records) and reuses it only for segments that are the very same `Arc`s. Feeding
//! the same requests with every segment freshly allocated disables all of that, so both runs
//! must give identical outcomes, request by request, for every model and configuration, with
//! several interleaved streams, concurrent requests, clocks that go back, and pools small enough
//! to evict.

use std::collections::HashMap;
use std::sync::Arc;

use plancache::cache::{self, CacheConfig, PriceTable, CACHE_NAMES};
use plancache::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind, Ttl};
use proptest::prelude::*;

/// A segment by value: id, level (0 tools, 1 system, 2 messages), length, breakpoint.
#[derive(Debug, Clone, Copy)]
struct Spec {
    id: u64,
    level: u8,
    len: usize,
    bp: Option<Ttl>,
}

fn build(s: &Spec) -> Arc<Segment> {
    let (level, kind) = match s.level {
        0 => (Level::Tools, SegmentKind::Tool),
        1 => (Level::System, SegmentKind::System),
        _ => (Level::Messages, SegmentKind::Message(Role::User)),
    };
    Arc::new(Segment {
        id: s.id,
        level,
        kind,
        label: format!("s{}", s.id),
        tokens: (0..s.len as u32).map(|i| (s.id as u32) << 12 | i).collect(),
        breakpoint: s.bp,
    })
}

/// One generated step: which stream sends, what changes first, sizes and times.
#[derive(Debug, Clone)]
struct StepSpec {
    stream: usize,
    change: u8,
    user: usize,
    reply: usize,
    keep_reply: bool,
    gap: u64,
    back: u64,
    ttft: u64,
    decode: u64,
    tool_choice: bool,
}

fn step() -> impl Strategy<Value = StepSpec> {
    (
        (0usize..3, 0u8..12, 1usize..700, 0usize..200, any::<bool>()),
        (
            prop_oneof![Just(0u64), 0u64..60_000, Just(400_000), Just(4_000_000)],
            prop_oneof![4 => Just(0u64), 1 => 0u64..90_000],
            0u64..5_000,
            0u64..20_000,
            prop::bool::weighted(0.1),
        ),
    )
        .prop_map(
            |(
                (stream, change, user, reply, keep_reply),
                (gap, back, ttft, decode, tool_choice),
            )| {
                StepSpec {
                    stream,
                    change,
                    user,
                    reply,
                    keep_reply,
                    gap,
                    back,
                    ttft,
                    decode,
                    tool_choice,
                }
            },
        )
}

/// The requests of a generated run, as segment specs, with their response times.
struct Sent {
    stream: String,
    model: &'static str,
    at: u64,
    visible: u64,
    done: u64,
    segments: Vec<Spec>,
    reply: Spec,
    tool_choice: bool,
}

fn plan(steps: &[StepSpec]) -> Vec<Sent> {
    let mut next = 0u64;
    let mut new = |level: u8, len: usize, bp: Option<Ttl>| {
        next += 1;
        Spec {
            id: next,
            level,
            len,
            bp,
        }
    };
    let tools: Vec<Spec> = (0..3).map(|k| new(0, 150 + 90 * k, None)).collect();
    let system = vec![new(1, 900, Some(Ttl::OneHour)), new(1, 300, None)];
    // Per stream: tools, conversation, model, clock.
    let mut streams: Vec<(Vec<Spec>, Vec<Spec>, usize, u64)> = (0..3)
        .map(|k| (tools.clone(), Vec::new(), 0, k as u64 * 700))
        .collect();
    let models = ["claude-sonnet-4-5", "claude-opus-4-5"];
    let mut out = Vec::new();
    for s in steps {
        let st = &mut streams[s.stream];
        match s.change {
            0 => st.0[1] = new(0, 200, None),
            1 => st.0 = tools.clone(),
            2 => st.1 = vec![new(2, s.user, None)],
            3 => st.2 = 1 - st.2,
            4 if !st.1.is_empty() => {
                let i = s.user % st.1.len();
                st.1[i] = new(2, 80, None);
            }
            _ => {}
        }
        let bp = (s.change == 5).then_some(Ttl::FiveMinutes);
        st.1.push(new(2, s.user, bp));
        st.3 += s.gap;
        let at = st.3.saturating_sub(s.back);
        let visible = at + s.ttft;
        let done = visible + s.decode;
        let reply = new(2, s.reply, None);
        let segments = st.0.iter().chain(&system).chain(&st.1).copied().collect();
        out.push(Sent {
            stream: if s.stream == 0 {
                "main".into()
            } else {
                format!("agent-{}", s.stream)
            },
            model: models[st.2],
            at,
            visible,
            done,
            segments,
            reply,
            tool_choice: s.tool_choice,
        });
        if s.keep_reply {
            st.1.push(reply);
        }
        st.3 = done;
    }
    out
}

/// The requests with segments shared as the engine shares them (one `Arc` per content), or
/// with every segment of every request allocated afresh.
fn requests(sent: &[Sent], shared: bool) -> Vec<Request> {
    let mut arcs: HashMap<u64, Arc<Segment>> = HashMap::new();
    let mut get = |s: &Spec| {
        if shared {
            arcs.entry(s.id).or_insert_with(|| build(s)).clone()
        } else {
            build(s)
        }
    };
    sent.iter()
        .enumerate()
        .map(|(i, s)| Request {
            index: i,
            stream: s.stream.clone(),
            step: i,
            model: s.model.into(),
            sent_at_ms: s.at,
            segments: s.segments.iter().map(&mut get).collect(),
            settings: RequestSettings {
                tool_choice: s.tool_choice.then(|| "any".to_string()),
                ..RequestSettings::default()
            },
            reply: vec![get(&s.reply)],
            output_tokens: s.reply.len as u64,
        })
        .collect()
}

fn configs() -> Vec<CacheConfig> {
    let mut small = CacheConfig::default();
    small.paged.block_size = 4;
    small.paged.capacity_blocks = 400;
    small.radix.capacity_tokens = 3000;
    small.openai.min_tokens = 64;
    small.openai.increment = 16;
    small.anthropic.lookback = 4;
    small.anthropic.min_cacheable = Some(100);
    small.anthropic.prewarmed_prefix = true;
    let mut paged = CacheConfig::default();
    paged.paged.capacity_blocks = 150;
    paged.radix.page_size = 8;
    paged.radix.capacity_tokens = 5000;
    paged.anthropic.explicit_breakpoints = true;
    paged.anthropic.prefix_kept_warm = true;
    vec![CacheConfig::default(), small, paged]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn remembered_state_gives_the_same_outcomes_as_recomputing(
        steps in proptest::collection::vec(step(), 1..36),
    ) {
        let sent = plan(&steps);
        let shared = requests(&sent, true);
        let fresh = requests(&sent, false);
        let prices = PriceTable::bundled();
        for config in configs() {
            for name in CACHE_NAMES {
                let mut a = cache::build_with(name, &prices, &config).unwrap();
                let mut b = cache::build_with(name, &prices, &config).unwrap();
                for (k, (x, y)) in shared.iter().zip(&fresh).enumerate() {
                    let s = &sent[k];
                    let ox = a.lookup(x);
                    let oy = b.lookup(y);
                    prop_assert_eq!(&ox, &oy, "{} request {}", name, k);
                    a.store(x, &ox, s.visible, s.done);
                    b.store(y, &oy, s.visible, s.done);
                }
            }
        }
    }
}
