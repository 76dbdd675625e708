//! DESIGN.md §6 invariants for every cache model on generated request sequences, and `ideal`
//! as an upper bound: no model ever reads more than `ideal` on the same sequence.

use std::sync::Arc;

use plancache::cache::{self, CacheConfig, CacheModel, CacheOutcome, PriceTable};
use plancache::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind};
use proptest::prelude::*;

/// One generated step of a session.
#[derive(Debug, Clone)]
enum Op {
    /// The conversation grows by the previous reply and a user block of this size.
    Grow(usize),
    /// One tool definition is replaced (a tool-list change).
    SwapTool(usize),
    /// The conversation restarts from a summary (compaction).
    Compact(usize),
    /// The request runs on the other model.
    SwitchModel,
    /// `tool_choice` changes (invalidates the messages level on Anthropic).
    ToolChoice,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..900).prop_map(Op::Grow),
        1 => (0usize..4).prop_map(Op::SwapTool),
        1 => (1usize..600).prop_map(Op::Compact),
        1 => Just(Op::SwitchModel),
        1 => Just(Op::ToolChoice),
    ]
}

/// Every segment has its own id and tokens derived from the id, so equal tokens mean equal
/// segments (as content ids guarantee in real replays).
struct Maker {
    next: u64,
}

impl Maker {
    fn seg(&mut self, level: Level, len: usize) -> Arc<Segment> {
        self.next += 1;
        let id = self.next;
        let kind = match level {
            Level::Tools => SegmentKind::Tool,
            Level::System => SegmentKind::System,
            Level::Messages => SegmentKind::Message(Role::User),
        };
        Arc::new(Segment {
            id,
            level,
            kind,
            label: format!("s{id}"),
            tokens: (0..len as u32).map(|i| (id as u32) << 12 | i).collect(),
            breakpoint: None,
        })
    }
}

/// Builds the request sequence of a generated session.
fn requests(ops: &[Op], gaps: &[u64], replies: &[usize]) -> Vec<Request> {
    let mut m = Maker { next: 0 };
    let mut tools: Vec<Arc<Segment>> = (0..4).map(|_| m.seg(Level::Tools, 300)).collect();
    let system = vec![m.seg(Level::System, 1100), m.seg(Level::System, 400)];
    let mut conversation = vec![m.seg(Level::Messages, 50)];
    let mut model = 0usize;
    let models = ["claude-sonnet-4-5", "claude-opus-4-1"];
    let mut settings = RequestSettings::default();
    let mut t = 0u64;
    let mut out: Vec<Request> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Grow(n) => conversation.push(m.seg(Level::Messages, *n)),
            Op::SwapTool(k) => tools[*k] = m.seg(Level::Tools, 250),
            Op::Compact(n) => conversation = vec![m.seg(Level::Messages, *n)],
            Op::SwitchModel => model = 1 - model,
            Op::ToolChoice => {
                settings.tool_choice = match settings.tool_choice {
                    Some(_) => None,
                    None => Some("any".into()),
                }
            }
        }
        let reply = m.seg(Level::Messages, replies[i % replies.len()]);
        let segments: Vec<Arc<Segment>> = tools
            .iter()
            .chain(&system)
            .chain(&conversation)
            .cloned()
            .collect();
        out.push(Request {
            index: i,
            stream: "main".into(),
            step: i,
            model: models[model].into(),
            sent_at_ms: t,
            segments,
            settings: settings.clone(),
            reply: vec![reply.clone()],
            output_tokens: reply.len() as u64 + 7,
        });
        conversation.push(reply);
        t += 1000 + gaps[i % gaps.len()];
    }
    out
}

/// Replays a sequence: each response begins 500 ms after it is sent and ends 1 s after.
fn replay(cache: &mut dyn CacheModel, reqs: &[Request]) -> Vec<CacheOutcome> {
    reqs.iter()
        .map(|r| {
            let o = cache.lookup(r);
            cache.store(r, &o, r.sent_at_ms + 500, r.sent_at_ms + 1000);
            o
        })
        .collect()
}

fn configs() -> Vec<(&'static str, CacheConfig)> {
    let mut small = CacheConfig::default();
    small.paged.capacity_blocks = 300;
    small.radix.capacity_tokens = 5000;
    small.radix.page_size = 4;
    vec![("default", CacheConfig::default()), ("small", small)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_and_ideal_is_an_upper_bound(
        ops in proptest::collection::vec(op(), 1..14),
        gaps in proptest::collection::vec(
            prop_oneof![0u64..60_000, 240_000u64..700_000, 3_000_000u64..4_000_000], 1..6),
        replies in proptest::collection::vec(1usize..300, 1..4),
    ) {
        let reqs = requests(&ops, &gaps, &replies);
        let prices = PriceTable::bundled();
        let mut ideal = cache::build("ideal", &prices).unwrap();
        let bound = replay(ideal.as_mut(), &reqs);
        for (label, cfg) in configs() {
            for name in cache::CACHE_NAMES {
                let mut c = cache::build_with(name, &prices, &cfg).unwrap();
                let outs = replay(c.as_mut(), &reqs);
                let mut again = cache::build_with(name, &prices, &cfg).unwrap();
                prop_assert_eq!(&outs, &replay(again.as_mut(), &reqs), "{} {} deterministic", name, label);
                for (i, (o, r)) in outs.iter().zip(&reqs).enumerate() {
                    let ctx = format!("{name} ({label}) request {i}: {o:?}");
                    prop_assert_eq!(o.prompt_tokens, r.prompt_tokens(), "{}", ctx);
                    prop_assert!(o.cached_tokens <= o.prompt_tokens, "{}", ctx);
                    prop_assert_eq!(o.cached_tokens + o.recomputed_tokens(), o.prompt_tokens, "{}", ctx);
                    prop_assert!(o.cache_write_tokens() <= o.recomputed_tokens(), "{}", ctx);
                    prop_assert_eq!(
                        o.cached_tokens + o.cache_write_tokens() + o.uncached_input_tokens,
                        o.prompt_tokens, "{}", ctx
                    );
                    prop_assert!((0.0..=1.0).contains(&o.hit_rate()), "{}", ctx);
                    if o.cached_tokens < o.prompt_tokens {
                        prop_assert!(o.stop.is_some(), "{}", ctx);
                    }
                    prop_assert!(o.cached_tokens <= bound[i].cached_tokens,
                        "{} reads more than ideal ({})", ctx, bound[i].cached_tokens);
                }
                if *name == "anthropic" {
                    keeps_tools_and_system(&reqs, &outs)?;
                }
            }
        }
    }
}

/// A request whose tools and system equal the previous request's (same model) within the 1 h TTL
/// of the Claude Code layout's system breakpoints reads at least the tools and system.
fn keeps_tools_and_system(reqs: &[Request], outs: &[CacheOutcome]) -> Result<(), TestCaseError> {
    for i in 1..reqs.len() {
        let (prev, cur) = (&reqs[i - 1], &reqs[i]);
        let head = |r: &Request| {
            r.segments
                .iter()
                .filter(|s| s.level < Level::Messages)
                .map(|s| s.id)
                .collect::<Vec<_>>()
        };
        if prev.model == cur.model
            && head(prev) == head(cur)
            && cur.sent_at_ms - prev.sent_at_ms < 3_600_000
        {
            let head_tokens: u64 = cur
                .segments
                .iter()
                .filter(|s| s.level < Level::Messages)
                .map(|s| s.len() as u64)
                .sum();
            prop_assert!(
                outs[i].cached_tokens >= head_tokens,
                "request {i} lost the tools/system prefix: {:?}",
                outs[i]
            );
        }
    }
    Ok(())
}
