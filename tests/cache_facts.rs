//! The checkable facts of CACHE_SEMANTICS.md §7 (1–9), with the documented numbers, plus the
//! lookback example and a TTL expiry through full scenario files.

use std::path::Path;
use std::sync::Arc;

use plancache::cache::{
    self, BreakReason, BreakpointCache, BreakpointConfig, CacheConfig, CacheModel, CacheOutcome,
    PagedCache, PagedConfig, PriceTable, RadixCache, RadixConfig,
};
use plancache::engine::{self, ReplayEnv};
use plancache::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind, Ttl};
use plancache::scenario::Session;

/// A segment whose tokens are `base, base+1, ...` (distinct bases give distinct content).
fn seg(id: u64, level: Level, base: u32, len: usize, bp: Option<Ttl>) -> Arc<Segment> {
    seg_tokens(id, level, (base..base + len as u32).collect(), bp)
}

fn seg_tokens(id: u64, level: Level, tokens: Vec<u32>, bp: Option<Ttl>) -> Arc<Segment> {
    let kind = match level {
        Level::Tools => SegmentKind::Tool,
        Level::System => SegmentKind::System,
        Level::Messages => SegmentKind::Message(Role::User),
    };
    Arc::new(Segment {
        id,
        level,
        kind,
        label: format!("seg{id}"),
        tokens: tokens.into(),
        breakpoint: bp,
    })
}

fn request(model: &str, at_ms: u64, segments: Vec<Arc<Segment>>) -> Request {
    Request {
        index: 0,
        stream: "main".into(),
        step: 0,
        model: model.into(),
        sent_at_ms: at_ms,
        segments,
        settings: RequestSettings::default(),
        reply: Vec::new(),
        output_tokens: 0,
    }
}

/// Looks a request up and stores it, its response beginning 1 s after it was sent.
fn send(cache: &mut dyn CacheModel, req: &Request) -> CacheOutcome {
    let out = cache.lookup(req);
    cache.store(req, &out, req.sent_at_ms + 1000, req.sent_at_ms + 2000);
    out
}

fn explicit() -> BreakpointCache {
    BreakpointCache::new(
        "anthropic-explicit",
        BreakpointConfig::explicit(),
        &PriceTable::bundled(),
    )
}

// Fact 1: OpenAI legacy 128-token increments (platform.openai.com prompt-caching, 2024-25).
#[test]
fn fact1_openai_128_token_increments() {
    let prices = PriceTable::bundled();
    // 1,300 shared tokens, then the prompts differ: 1,300 -> 10 x 128 = 1,280.
    let mut c = cache::build("openai", &prices).unwrap();
    let shared = seg(1, Level::System, 0, 1300, None);
    send(
        c.as_mut(),
        &request(
            "gpt-4o",
            0,
            vec![shared.clone(), seg(2, Level::Messages, 10_000, 700, None)],
        ),
    );
    let out = send(
        c.as_mut(),
        &request(
            "gpt-4o",
            60_000,
            vec![shared, seg(3, Level::Messages, 20_000, 200, None)],
        ),
    );
    assert_eq!(out.prompt_tokens, 1500);
    assert_eq!(out.cached_tokens, 1280);

    // The doc example: an identical 2,006-token prompt resent -> 15 x 128 = 1,920.
    let mut c = cache::build("openai", &prices).unwrap();
    let p = request("gpt-4o", 0, vec![seg(1, Level::System, 0, 2006, None)]);
    assert_eq!(send(c.as_mut(), &p).cached_tokens, 0);
    let mut again = p.clone();
    again.sent_at_ms = 60_000;
    let out = send(c.as_mut(), &again);
    assert_eq!(out.cached_tokens, 1920);
    assert_eq!(out.stop.unwrap().reason, BreakReason::Rounding);

    // A 1,000-token prompt is never cached.
    let mut c = cache::build("openai", &prices).unwrap();
    let p = request("gpt-4o", 0, vec![seg(1, Level::System, 0, 1000, None)]);
    send(c.as_mut(), &p);
    let mut again = p.clone();
    again.sent_at_ms = 60_000;
    let out = send(c.as_mut(), &again);
    assert_eq!(out.cached_tokens, 0);
    assert_eq!(out.stop.unwrap().reason, BreakReason::BelowMinimum);
}

// Fact 2: the Pride and Prejudice usage example (Sept-2025 Anthropic doc).
#[test]
fn fact2_anthropic_doc_usage_example() {
    let mut c = explicit();
    let book = seg(1, Level::System, 0, 188_086, Some(Ttl::FiveMinutes));
    let call = |t| {
        request(
            "claude-sonnet-4-5",
            t,
            vec![book.clone(), seg(2, Level::Messages, 500_000, 21, None)],
        )
    };
    let one = send(&mut c, &call(0));
    assert_eq!(
        (
            one.cache_write_tokens(),
            one.cached_tokens,
            one.uncached_input_tokens
        ),
        (188_086, 0, 21)
    );
    assert_eq!(one.write_5m_tokens, 188_086);
    let two = send(&mut c, &call(30_000));
    assert_eq!(
        (
            two.cache_write_tokens(),
            two.cached_tokens,
            two.uncached_input_tokens
        ),
        (0, 188_086, 21)
    );
}

/// `n` message blocks of 200 tokens, a 5m breakpoint on each block number in `bps` (1-based).
fn blocks(n: usize, bps: &[usize]) -> Vec<Arc<Segment>> {
    (1..=n)
        .map(|i| {
            let bp = bps.contains(&i).then_some(Ttl::FiveMinutes);
            seg(i as u64, Level::Messages, i as u32 * 1000, 200, bp)
        })
        .collect()
}

// Fact 3: the 20-position lookback (newest Anthropic doc).
#[test]
fn fact3_anthropic_lookback_10_15_35() {
    let mut c = explicit();
    let t1 = send(&mut c, &request("claude-sonnet-4-5", 0, blocks(10, &[10])));
    assert_eq!((t1.cached_tokens, t1.cache_write_tokens()), (0, 2000));
    // Turn 2: hit at block 10 (2,000 tokens), blocks 11-15 written.
    let t2 = send(
        &mut c,
        &request("claude-sonnet-4-5", 10_000, blocks(15, &[15])),
    );
    assert_eq!((t2.cached_tokens, t2.cache_write_tokens()), (2000, 1000));
    // Turn 3: 35 checks 35..16, and 15 is one position outside: no hit.
    let mut c3 = explicit();
    send(&mut c3, &request("claude-sonnet-4-5", 0, blocks(10, &[10])));
    send(
        &mut c3,
        &request("claude-sonnet-4-5", 10_000, blocks(15, &[15])),
    );
    let t3 = send(
        &mut c3,
        &request("claude-sonnet-4-5", 20_000, blocks(35, &[35])),
    );
    assert_eq!(t3.cached_tokens, 0);
    assert_eq!(t3.cache_write_tokens(), 7000);
    assert_eq!(t3.stop.unwrap().reason, BreakReason::LookbackExceeded);
    // With a second breakpoint at 15, turn 3 reads 15 blocks.
    let t3b = send(
        &mut c,
        &request("claude-sonnet-4-5", 20_000, blocks(35, &[15, 35])),
    );
    assert_eq!(t3b.cached_tokens, 3000);
    assert_eq!(t3b.cache_write_tokens(), 4000);
}

// Fact 4: mixed TTL billing (A10), Sonnet at $3.
#[test]
fn fact4_anthropic_mixed_ttl_cost() {
    let mut c = explicit();
    let req = request(
        "claude-sonnet-4-5",
        0,
        vec![
            seg(1, Level::System, 0, 5000, Some(Ttl::OneHour)),
            seg(2, Level::Messages, 10_000, 3000, Some(Ttl::FiveMinutes)),
        ],
    );
    let out = send(&mut c, &req);
    // A = 0, B = 5,000 (the 1h breakpoint), C = 8,000.
    assert_eq!((out.write_1h_tokens, out.write_5m_tokens), (5000, 3000));
    let sonnet = PriceTable::bundled()
        .get("claude-sonnet-4-5")
        .unwrap()
        .clone();
    // 5,000 x $6 + 3,000 x $3.75 per MTok = $0.04125.
    assert!((sonnet.cost(&out, 0) - 0.04125).abs() < 1e-12);
}

// Fact 5: below the minimum nothing is cached (Opus 4.5: 4,096).
#[test]
fn fact5_anthropic_minimum_opus_4_5() {
    let mut c = explicit();
    let req = |t| {
        request(
            "claude-opus-4-5",
            t,
            vec![seg(1, Level::System, 0, 3000, Some(Ttl::FiveMinutes))],
        )
    };
    for t in [0, 10_000] {
        let out = send(&mut c, &req(t));
        assert_eq!((out.cache_write_tokens(), out.cached_tokens), (0, 0));
        assert_eq!(out.uncached_input_tokens, 3000);
    }
    // The same prefix on Sonnet 4.5 (minimum 1,024) is cached.
    let mut s = explicit();
    let mut r = req(0);
    r.model = "claude-sonnet-4-5".into();
    assert_eq!(send(&mut s, &r).cache_write_tokens(), 3000);
}

// Fact 6: vLLM block 16, hit <= prompt - 1 rounded down to whole blocks.
#[test]
fn fact6_vllm_blocks() {
    let new = || PagedCache::new(PagedConfig::default());
    // Identical 64-token prompt: max 63 -> 3 blocks = 48.
    let mut c = new();
    let p = request("m", 0, vec![seg(1, Level::Messages, 0, 64, None)]);
    send(&mut c, &p);
    assert_eq!(
        send(&mut c, &request("m", 5000, p.segments.clone())).cached_tokens,
        48
    );
    // 65 tokens sharing the first 64: 4 blocks = 64.
    let mut c = new();
    send(&mut c, &p);
    let longer = request(
        "m",
        5000,
        vec![p.segments[0].clone(), seg(2, Level::Messages, 900, 1, None)],
    );
    assert_eq!(send(&mut c, &longer).cached_tokens, 64);
    // 100 tokens sharing the first 40 with a cached 100-token prompt: 2 blocks = 32.
    let mut c = new();
    let mut a: Vec<u32> = (0..40).collect();
    a.extend(1000..1060);
    let mut b: Vec<u32> = (0..40).collect();
    b.extend(2000..2060);
    send(
        &mut c,
        &request("m", 0, vec![seg_tokens(1, Level::Messages, a, None)]),
    );
    let out = send(
        &mut c,
        &request("m", 5000, vec![seg_tokens(2, Level::Messages, b, None)]),
    );
    assert_eq!(out.cached_tokens, 32);
}

// Fact 7: SGLang caps the hit at prompt - 1, aligned to the page.
#[test]
fn fact7_sglang_page_alignment() {
    for (page, expected) in [(1usize, 1324u64), (16, 1312)] {
        let mut c = RadixCache::new(RadixConfig {
            page_size: page,
            ..RadixConfig::default()
        });
        let p = request("m", 0, vec![seg(1, Level::Messages, 0, 1325, None)]);
        send(&mut c, &p);
        let out = send(&mut c, &request("m", 5000, p.segments.clone()));
        assert_eq!(out.cached_tokens, expected, "page size {page}");
    }
}

fn claude_code_request(t: u64, tool_text: u32) -> Request {
    request(
        "claude-sonnet-4-5",
        t,
        vec![
            seg(1, Level::Tools, 0, 600, None),
            seg(
                2 + tool_text as u64 * 100,
                Level::Tools,
                10_000 + tool_text,
                700,
                None,
            ),
            seg(3, Level::System, 20_000, 3000, None),
            seg(4, Level::System, 30_000, 2000, None),
            seg(5, Level::Messages, 40_000, 500, None),
        ],
    )
}

// Fact 8: tool_choice invalidates only the messages; a tool edit invalidates everything.
#[test]
fn fact8_anthropic_invalidation_levels() {
    let mut c = cache::build("anthropic", &PriceTable::bundled()).unwrap();
    send(c.as_mut(), &claude_code_request(0, 0));
    let mut choice = claude_code_request(10_000, 0);
    choice.settings.tool_choice = Some("any".into());
    let out = send(c.as_mut(), &choice);
    // Tools (1,300) + system (5,000) still read; the 500-token message is written again.
    assert_eq!(out.cached_tokens, 6300);
    assert_eq!(out.cache_write_tokens(), 500);
    let stop = out.stop.unwrap();
    assert_eq!(
        (stop.level, stop.reason),
        (Level::Messages, BreakReason::PrefixChanged)
    );
    // One tool description edited: nothing reads.
    let out = send(c.as_mut(), &claude_code_request(20_000, 1));
    assert_eq!(out.cached_tokens, 0);
    let stop = out.stop.unwrap();
    assert_eq!(
        (stop.level, stop.reason),
        (Level::Tools, BreakReason::PrefixChanged)
    );
    assert_eq!(stop.segment, "seg102");
}

// Fact 9: an entry is readable only once the first response has begun.
#[test]
fn fact9_anthropic_concurrency() {
    let mut c = cache::build("anthropic", &PriceTable::bundled()).unwrap();
    let r = claude_code_request(0, 0);
    let first = c.lookup(&r);
    c.store(&r, &first, 1500, 4000); // response begins at 1.5 s
    let second = c.lookup(&r); // sent together, at 0
    c.store(&r, &second, 1600, 4100);
    for o in [&first, &second] {
        assert!(o.cache_write_tokens() > 0);
        assert_eq!(o.cached_tokens, 0);
    }
    assert_eq!(second.stop.clone().unwrap().reason, BreakReason::InFlight);
    let mut third = r.clone();
    third.sent_at_ms = 2000;
    let out = c.lookup(&third);
    assert_eq!(out.cached_tokens, 6800);
    assert_eq!(out.cache_write_tokens(), 0);
}

fn replay_fixture(name: &str, cache_name: &str, config: &CacheConfig) -> Vec<(u64, u64, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let session = Session::load(&path, None).unwrap();
    let strategy = plancache::strategy::parse_list("permission-mode").unwrap();
    let env = ReplayEnv::default();
    let mut c = cache::build_with(cache_name, &env.prices, config).unwrap();
    let replay = engine::replay(&session, strategy[0].as_ref(), c.as_mut(), &env).unwrap();
    replay
        .rows
        .iter()
        .map(|r| (r.prompt_tokens, r.cached_tokens, r.break_text()))
        .collect()
}

#[test]
fn scenario_lookback_example() {
    let cfg = CacheConfig::default();
    // Automatic breakpoint on the last block: blocks 10, 15, 35 of 200 tokens.
    let rows = replay_fixture("lookback-10-15-35.toml", "anthropic-auto", &cfg);
    let got: Vec<(u64, u64)> = rows.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(got, vec![(2000, 0), (3000, 2000), (7000, 0)]);
    assert!(rows[2].2.contains("lookback exceeded"), "{}", rows[2].2);
    // An explicit breakpoint on block 15 makes request 3 read 15 blocks.
    let rows = replay_fixture("lookback-breakpoint-15.toml", "anthropic-auto", &cfg);
    let got: Vec<(u64, u64)> = rows.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(got, vec![(2000, 0), (3000, 2000), (7000, 3000)]);
}

#[test]
fn scenario_ttl_expiry_in_long_wait() {
    // Tools 500 + system 5,000 + user 400 = 5,900; after the 10 min wait the prompt is 6,300.
    let mut cfg = CacheConfig::default();
    let hour = replay_fixture("ttl-long-wait.toml", "anthropic", &cfg);
    assert_eq!(hour[1].1, 5900, "1 h entries survive a 10 min wait");
    assert_eq!(hour[1].2, "");
    cfg.anthropic.message_ttl = Ttl::FiveMinutes;
    cfg.anthropic.system_ttl = Ttl::FiveMinutes;
    let five = replay_fixture("ttl-long-wait.toml", "anthropic", &cfg);
    assert_eq!(five[1].1, 0, "5 min entries expire during a 10 min wait");
    assert!(five[1].2.contains("ttl expired"), "{}", five[1].2);
    // 1 h system entries with a 5 min message entry: the system prefix still reads.
    cfg.anthropic.system_ttl = Ttl::OneHour;
    let mixed = replay_fixture("ttl-long-wait.toml", "anthropic", &cfg);
    assert_eq!(mixed[1].1, 5500);
    assert!(mixed[1].2.contains("ttl expired"), "{}", mixed[1].2);
}

#[test]
fn prewarmed_prefix_reads_on_the_first_request() {
    let prices = PriceTable::bundled();
    let cfg = BreakpointConfig {
        prewarmed_prefix: true,
        ..BreakpointConfig::default()
    };
    let mut c = BreakpointCache::new("anthropic", cfg, &prices);
    let out = send(&mut c, &claude_code_request(0, 0));
    // Tools + system = 6,300 tokens read; the 500-token message written (1 h).
    assert_eq!((out.cached_tokens, out.write_1h_tokens), (6300, 500));
}

#[test]
fn model_change_is_cold() {
    let mut c = cache::build("anthropic", &PriceTable::bundled()).unwrap();
    send(c.as_mut(), &claude_code_request(0, 0));
    let mut other = claude_code_request(10_000, 0);
    other.model = "claude-opus-4-1".into();
    let out = send(c.as_mut(), &other);
    assert_eq!(out.cached_tokens, 0);
    assert_eq!(out.stop.unwrap().reason, BreakReason::ModelChanged);
}

#[test]
fn cache_config_file_overrides_and_errors() {
    let cfg = CacheConfig::from_toml_str(
        "[anthropic]\nmessage_ttl = \"5m\"\n[openai]\nidle_ttl = \"24h\"\n[paged]\nblock_size = 32\n",
        "test.toml",
    )
    .unwrap();
    assert_eq!(cfg.anthropic.message_ttl, Ttl::FiveMinutes);
    assert_eq!(cfg.anthropic.lookback, 20);
    assert_eq!(cfg.openai.idle_ttl.as_secs(), 24 * 3600);
    assert_eq!(cfg.paged.block_size, 32);
    // anthropic-auto keeps its own defaults when only one key is given.
    let cfg = CacheConfig::from_toml_str("[anthropic-auto]\nlookback = 5\n", "t").unwrap();
    assert_eq!(cfg.anthropic_auto.message_ttl, Ttl::FiveMinutes);
    assert_eq!(cfg.anthropic_auto.lookback, 5);
    let err = CacheConfig::from_toml_str("[anthropic]\nlookbak = 5\n", "t.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("t.toml") && err.contains("lookbak"), "{err}");
    let err = CacheConfig::from_toml_str("[anthropic]\nsystem_ttl = \"5m\"\n", "t.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("longer TTLs first"), "{err}");
    let err = CacheConfig::from_toml_str("[foo]\nx = 1\n", "t.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown cache model table [foo]"), "{err}");
}

// ---- Model behaviour beyond §7 (documented rules each model must follow) ----

fn with_reply(mut r: Request, reply: Arc<Segment>, reasoning: u64) -> Request {
    r.output_tokens = reply.len() as u64 + reasoning;
    r.reply = vec![reply];
    r
}

#[test]
fn paged_evicts_tails_first() {
    // Pool of 4 blocks. A (48 tokens, 3 blocks) finishes; B needs 2 new blocks: one unused
    // block plus the least recently freed one, A's tail (freed first, V6).
    let mut c = PagedCache::new(PagedConfig {
        block_size: 16,
        capacity_blocks: 4,
    });
    let a = request("m", 0, vec![seg(1, Level::Messages, 0, 48, None)]);
    send(&mut c, &a);
    send(
        &mut c,
        &request("m", 10_000, vec![seg(2, Level::Messages, 5000, 32, None)]),
    );
    // A + 20 tokens: blocks 1-2 of A survive (evicting the head first would leave nothing).
    let longer = request(
        "m",
        20_000,
        vec![
            a.segments[0].clone(),
            seg(3, Level::Messages, 9000, 20, None),
        ],
    );
    let out = send(&mut c, &longer);
    assert_eq!(out.cached_tokens, 32);
    assert_eq!(out.stop.unwrap().reason, BreakReason::Evicted);
}

#[test]
fn paged_eviction_is_reported() {
    let mut c = PagedCache::new(PagedConfig {
        block_size: 16,
        capacity_blocks: 4,
    });
    let a = request("m", 0, vec![seg(1, Level::Messages, 0, 64, None)]);
    send(&mut c, &a);
    send(
        &mut c,
        &request("m", 10_000, vec![seg(2, Level::Messages, 5000, 64, None)]),
    );
    let mut b = a.clone();
    b.sent_at_ms = 20_000;
    b.stream = "other".into();
    let out = c.lookup(&b);
    assert_eq!(out.cached_tokens, 0);
    assert_eq!(out.stop.unwrap().reason, BreakReason::Evicted);
}

#[test]
fn radix_evicts_lru_leaves() {
    let mut c = RadixCache::new(RadixConfig {
        page_size: 1,
        capacity_tokens: 100,
        ..RadixConfig::default()
    });
    let a = request("m", 0, vec![seg(1, Level::Messages, 0, 60, None)]);
    send(&mut c, &a);
    send(
        &mut c,
        &request("m", 10_000, vec![seg(2, Level::Messages, 5000, 60, None)]),
    );
    let mut again = a.clone();
    again.sent_at_ms = 20_000;
    again.stream = "other".into();
    let out = c.lookup(&again);
    assert_eq!(out.cached_tokens, 0);
    assert_eq!(out.stop.unwrap().reason, BreakReason::Evicted);
}

#[test]
fn automatic_caches_hold_what_was_generated() {
    let prices = PriceTable::bundled();
    // Prompt 1,100 + visible reply 300; the next prompt repeats the reply and adds 200.
    let p1 = seg(1, Level::System, 0, 1100, None);
    let reply = seg(2, Level::Messages, 10_000, 300, None);
    let next = request(
        "gpt-4o",
        60_000,
        vec![
            p1.clone(),
            reply.clone(),
            seg(3, Level::Messages, 20_000, 200, None),
        ],
    );
    // Without reasoning the cached sequence is prompt + reply, which the next prompt repeats:
    // OpenAI 1,400 tokens = 10 blocks -> 1,280; paged caches whole blocks of 1,400 - 1 (the
    // last sampled token is never computed) = 87 blocks -> 1,392; radix and ideal 1,400.
    // With 5,000 reasoning tokens the cached sequence is prompt + reasoning + reply and the
    // next prompt departs from it right after the prompt: OpenAI 8 blocks = 1,024, paged
    // 68 blocks = 1,088, radix and ideal 1,100.
    for (reasoning, want) in [
        (0, [1280, 1392, 1400, 1400]),
        (5000, [1024, 1088, 1100, 1100]),
    ] {
        let first = with_reply(
            request("gpt-4o", 0, vec![p1.clone()]),
            reply.clone(),
            reasoning,
        );
        for (name, expected) in ["openai", "paged", "radix", "ideal"].into_iter().zip(want) {
            let mut c = cache::build(name, &prices).unwrap();
            send(c.as_mut(), &first);
            assert_eq!(
                send(c.as_mut(), &next).cached_tokens,
                expected,
                "{name}, {reasoning} reasoning tokens"
            );
        }
    }
    let first = with_reply(request("gpt-4o", 0, vec![p1.clone()]), reply.clone(), 5000);
    // Anthropic does not cache the reply: the next request reads the first prompt only.
    let mut c = explicit();
    let bp = |s: &Arc<Segment>| {
        let mut x = (**s).clone();
        x.breakpoint = Some(Ttl::FiveMinutes);
        Arc::new(x)
    };
    let mut f = first.clone();
    f.model = "claude-sonnet-4-5".into();
    f.segments = vec![bp(&f.segments[0])];
    send(&mut c, &f);
    let mut n = next.clone();
    n.model = "claude-sonnet-4-5".into();
    n.segments = vec![
        f.segments[0].clone(),
        n.segments[1].clone(),
        bp(&n.segments[2]),
    ];
    assert_eq!(send(&mut c, &n).cached_tokens, 1100);
}

#[test]
fn openai_idle_ttl_and_max_age() {
    let prices = PriceTable::bundled();
    let p = |t| request("gpt-4.1", t, vec![seg(1, Level::System, 0, 2048, None)]);
    let min = 60_000;
    // Default: the 1 h maximum counts from the last use, so a prefix hit every 9 min (each hit
    // refreshing the 10 min idle timer) is still there at 63 min.
    let mut c = cache::build("openai", &prices).unwrap();
    send(c.as_mut(), &p(0));
    for k in 1..=7 {
        assert_eq!(
            send(c.as_mut(), &p(k * 9 * min)).cached_tokens,
            2048,
            "at {} min",
            k * 9
        );
    }
    // Counted from the first write instead, entries older than 1 h are gone (written at ~0,
    // now 63 min).
    let mut cfg = CacheConfig::default();
    cfg.openai.max_age_from = plancache::cache::openai::AgeFrom::FirstWrite;
    let mut c = cache::build_with("openai", &prices, &cfg).unwrap();
    send(c.as_mut(), &p(0));
    for k in 1..=6 {
        assert_eq!(send(c.as_mut(), &p(k * 9 * min)).cached_tokens, 2048);
    }
    let out = send(c.as_mut(), &p(63 * min));
    assert_eq!(out.cached_tokens, 0);
    assert_eq!(out.stop.unwrap().reason, BreakReason::TtlExpired);
    // 11 min idle -> expired.
    let mut c = cache::build("openai", &prices).unwrap();
    send(c.as_mut(), &p(0));
    assert_eq!(send(c.as_mut(), &p(11 * min)).cached_tokens, 0);
}

#[test]
fn openai_5_6_writes_billed_no_rounding_30_min() {
    let prices = PriceTable::bundled();
    let p = |t| {
        request(
            "gpt-5.6-terra",
            t,
            vec![seg(1, Level::System, 0, 2006, None)],
        )
    };
    let mut c = cache::build("openai-5.6", &prices).unwrap();
    let first = send(c.as_mut(), &p(0));
    assert_eq!(first.write_5m_tokens, 2006);
    let terra = prices.get("gpt-5.6-terra").unwrap();
    // 2,006 x $2.50 x 1.25 per MTok.
    assert!((terra.cost(&first, 0) - 2006.0 * 2.5 * 1.25 / 1e6).abs() < 1e-12);
    // No 128 rounding: the whole 2,006 tokens read.
    assert_eq!(send(c.as_mut(), &p(29 * 60_000)).cached_tokens, 2006);
    // 31 min idle after the last hit -> gone.
    assert_eq!(send(c.as_mut(), &p(61 * 60_000)).cached_tokens, 0);
}

#[test]
fn latency_reproduces_anthropic_launch_figures() {
    let table = plancache::cache::LatencyTable::bundled();
    let a = table.for_provider("anthropic");
    let uncached = CacheOutcome {
        prompt_tokens: 100_000,
        ..CacheOutcome::default()
    };
    let cached = CacheOutcome {
        prompt_tokens: 100_000,
        cached_tokens: 100_000,
        ..CacheOutcome::default()
    };
    // 100k tokens: 11.5 s uncached, 2.4 s cached; 10k uncached: 1.6 s.
    assert!((a.ttft_ms(&uncached) - 11_500.0).abs() < 1.0);
    assert!((a.ttft_ms(&cached) - 2_400.0).abs() < 1.0);
    let small = CacheOutcome {
        prompt_tokens: 10_000,
        ..CacheOutcome::default()
    };
    assert!((a.ttft_ms(&small) - 1_600.0).abs() < 1.0);
    // OpenAI: a 100k prompt is 80% faster cached.
    let o = table.for_provider("openai");
    assert!((o.ttft_ms(&cached) / o.ttft_ms(&uncached) - 0.2).abs() < 1e-3);
}

#[test]
fn price_table_covers_the_models_with_sources() {
    let t = PriceTable::bundled();
    let expect = [
        ("claude-sonnet-4", 3.0, 1024),
        ("claude-sonnet-4-5", 3.0, 1024),
        ("claude-sonnet-4-6", 3.0, 2048),
        ("claude-opus-4", 15.0, 1024),
        ("claude-opus-4-1", 15.0, 1024),
        ("claude-opus-4-5", 5.0, 4096),
        ("claude-opus-4-6", 5.0, 4096),
        ("claude-haiku-4-5", 1.0, 4096),
        ("gpt-4o", 2.5, 1024),
        ("gpt-4.1", 2.0, 1024),
        ("gpt-5", 1.25, 1024),
        ("gpt-5.6-terra", 2.5, 1024),
    ];
    for (name, input, min) in expect {
        let m = t.get(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!((m.input, m.min_cacheable), (input, min), "{name}");
        assert!(
            !m.source.is_empty() && !m.date.is_empty(),
            "{name} needs source and date"
        );
    }
    // Read discounts per OpenAI model (O5) and Anthropic 0.1.
    assert_eq!(t.get("gpt-4o").unwrap().read, 0.5);
    assert_eq!(t.get("gpt-4.1").unwrap().read, 0.25);
    assert_eq!(t.get("gpt-5").unwrap().read, 0.1);
    assert_eq!(t.get("claude-opus-4-1").unwrap().read * 15.0, 1.5);
}

#[test]
fn free_writes_are_billed_as_plain_input() {
    let t = PriceTable::bundled();
    let m = t.get("claude-sonnet-4-5").unwrap();
    let o = CacheOutcome {
        prompt_tokens: 1000,
        write_5m_tokens: 1000,
        ..CacheOutcome::default()
    };
    assert!((m.cost_billed(&o, 0, true) - 1000.0 * 3.75 / 1e6).abs() < 1e-12);
    assert!((m.cost_billed(&o, 0, false) - 1000.0 * 3.0 / 1e6).abs() < 1e-12);
}

#[test]
fn a_previous_prompt_below_the_minimum_explains_the_miss() {
    // Opus 4.5 (minimum 4,096): a 3,000-token request writes nothing, so the next one, which
    // extends it to 5,000 tokens, reads nothing and says why.
    let mut c = cache::build("anthropic", &PriceTable::bundled()).unwrap();
    let head = vec![
        seg(1, Level::Tools, 0, 1000, None),
        seg(2, Level::System, 5000, 1500, None),
        seg(3, Level::Messages, 9000, 500, None),
    ];
    let first = send(c.as_mut(), &request("claude-opus-4-5", 0, head.clone()));
    assert_eq!((first.cached_tokens, first.cache_write_tokens()), (0, 0));
    let mut longer = head;
    longer.push(seg(4, Level::Messages, 20_000, 2000, None));
    let out = send(c.as_mut(), &request("claude-opus-4-5", 10_000, longer));
    assert_eq!((out.cached_tokens, out.write_1h_tokens), (0, 5000));
    assert_eq!(out.stop.unwrap().reason, BreakReason::BelowMinimum);
}

#[test]
fn speed_toggle_invalidates_system_and_messages_but_not_tools() {
    // One system block: the Claude Code layout marks the last tool and the system block, so the
    // tools (1,300 tokens) are an entry of their own (A12: `speed` invalidates system+messages).
    let mut c = cache::build("anthropic", &PriceTable::bundled()).unwrap();
    let r = |t| {
        request(
            "claude-sonnet-4-5",
            t,
            vec![
                seg(1, Level::Tools, 0, 600, None),
                seg(2, Level::Tools, 10_000, 700, None),
                seg(3, Level::System, 20_000, 5000, None),
                seg(4, Level::Messages, 40_000, 500, None),
            ],
        )
    };
    send(c.as_mut(), &r(0));
    let mut fast = r(10_000);
    fast.settings.fast = true;
    let out = send(c.as_mut(), &fast);
    assert_eq!(out.cached_tokens, 1300);
    let stop = out.stop.unwrap();
    assert_eq!(
        (stop.level, stop.reason),
        (Level::System, BreakReason::PrefixChanged)
    );
    // Thinking budget changes invalidate only the messages.
    let mut think = fast.clone();
    think.sent_at_ms = 20_000;
    think.settings.thinking_budget = Some(4096);
    assert_eq!(send(c.as_mut(), &think).cached_tokens, 6300);
}

#[test]
fn plan_mode_transitions_do_not_break_claude_codes_cache() {
    // §8: under Claude Code's layout and permission-mode (tools and system never change), every
    // request after the first reads at least 99% of the previous request's prompt, plan-mode
    // entry, ExitPlanMode, approval and rejection included.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let strategy = plancache::strategy::parse_list("permission-mode").unwrap();
    let env = ReplayEnv::default();
    for file in ["scenarios/auth-plan.toml", "scenarios/exercise-3.toml"] {
        let session = Session::load(&root.join(file), None).unwrap();
        let mut c = cache::build("anthropic", &env.prices).unwrap();
        let replay = engine::replay(&session, strategy[0].as_ref(), c.as_mut(), &env).unwrap();
        for pair in replay.rows.windows(2) {
            let (prev, cur) = (&pair[0], &pair[1]);
            assert!(
                cur.cached_tokens * 100 >= prev.prompt_tokens * 99,
                "{file} request {}: read {} of the previous {}",
                cur.request,
                cur.cached_tokens,
                prev.prompt_tokens
            );
            assert_eq!(cur.break_text(), "", "{file} request {}", cur.request);
        }
    }
}
