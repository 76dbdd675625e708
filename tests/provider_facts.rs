//! Documented facts of the Gemini, DeepSeek and Bedrock caches (CACHE_SEMANTICS.md §3), each
//! with the figure derived by hand from the providers' documentation (derivations in comments).

use std::sync::Arc;

use plancache::cache::{
    self, BreakReason, CacheConfig, CacheModel, CacheOutcome, ModelPrice, PriceTable,
};
use plancache::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind, Ttl};

const MIN: u64 = 60_000;

/// A segment whose tokens are `base, base+1, ...` (distinct bases give distinct content).
fn seg(id: u64, level: Level, base: u32, len: usize, bp: Option<Ttl>) -> Arc<Segment> {
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
        tokens: (base..base + len as u32).collect::<Vec<_>>().into(),
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

/// Looks a request up and stores it, its response beginning 1 s after it was sent and ending
/// 2 s after.
fn send(cache: &mut dyn CacheModel, req: &Request) -> CacheOutcome {
    let out = cache.lookup(req);
    cache.store(req, &out, req.sent_at_ms + 1000, req.sent_at_ms + 2000);
    out
}

fn price(model: &str) -> ModelPrice {
    PriceTable::bundled().get(model).unwrap().clone()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

// ---------------------------------------------------------------------------------------------
// DeepSeek (api-docs.deepseek.com guides/kv_cache, news/news0802)

#[test]
fn deepseek_hits_whole_64_token_units_of_a_shared_prefix() {
    let prices = PriceTable::bundled();
    let mut c = cache::build("deepseek", &prices).unwrap();
    let shared = seg(1, Level::System, 0, 1000, None);
    send(
        c.as_mut(),
        &request(
            "deepseek-chat",
            0,
            vec![shared.clone(), seg(2, Level::Messages, 10_000, 200, None)],
        ),
    );
    let out = send(
        c.as_mut(),
        &request(
            "deepseek-chat",
            MIN,
            vec![shared, seg(3, Level::Messages, 20_000, 300, None)],
        ),
    );
    // 1,000 shared tokens -> 15 whole units of 64 = 960 (the 16th unit, tokens 960..1024,
    // straddles the change).
    assert_eq!(out.prompt_tokens, 1300);
    assert_eq!(out.cached_tokens, 960);
    assert_eq!(
        out.stop.as_ref().unwrap().reason,
        BreakReason::PrefixChanged
    );
    // No write fee: the 340 missed tokens are plain input, the 960 hit at 0.1 x $0.28.
    // (340 + 96) x $0.28 / 1M = $0.00012208.
    let cost = price("deepseek-chat").cost_billed(&out, 0, c.charges_writes());
    assert!(!c.charges_writes());
    assert!(close(cost, 436.0 * 0.28 / 1e6), "{cost}");
}

#[test]
fn deepseek_matches_from_token_0_only_and_not_below_one_unit() {
    let prices = PriceTable::bundled();
    let mut c = cache::build("deepseek", &prices).unwrap();
    let body = seg(2, Level::Messages, 5_000, 1000, None);
    send(
        c.as_mut(),
        &request(
            "deepseek-chat",
            0,
            vec![seg(1, Level::System, 0, 10, None), body.clone()],
        ),
    );
    // The same 1,000 tokens after a different first 10: no prefix from token 0 is shared.
    let out = send(
        c.as_mut(),
        &request(
            "deepseek-chat",
            MIN,
            vec![seg(3, Level::System, 900, 10, None), body],
        ),
    );
    assert_eq!(out.cached_tokens, 0);
    // A 50-token prompt is under one 64-token unit: never cached.
    let mut c = cache::build("deepseek", &prices).unwrap();
    let short = request("deepseek-chat", 0, vec![seg(1, Level::System, 0, 50, None)]);
    assert_eq!(send(c.as_mut(), &short).cache_write_tokens(), 0);
    let mut again = short.clone();
    again.sent_at_ms = MIN;
    let out = send(c.as_mut(), &again);
    assert_eq!(out.cached_tokens, 0);
    assert_eq!(out.stop.unwrap().reason, BreakReason::BelowMinimum);
}

#[test]
fn deepseek_entries_are_readable_only_once_built_and_last_hours() {
    let prices = PriceTable::bundled();
    let prompt = |t| {
        request(
            "deepseek-chat",
            t,
            vec![seg(1, Level::System, 0, 640, None)],
        )
    };
    // The response begins at 1 s; building takes 5 s more: readable from 6 s.
    let mut c = cache::build("deepseek", &prices).unwrap();
    send(c.as_mut(), &prompt(0));
    let early = send(c.as_mut(), &prompt(4_000));
    assert_eq!(early.cached_tokens, 0);
    assert_eq!(early.stop.unwrap().reason, BreakReason::InFlight);
    let mut c = cache::build("deepseek", &prices).unwrap();
    send(c.as_mut(), &prompt(0));
    assert_eq!(send(c.as_mut(), &prompt(7_000)).cached_tokens, 640);
    // "A few hours to a few days": 2 h idle still hits, 4 h idle (over the 3 h low end) misses.
    let h = 3_600_000;
    let mut c = cache::build("deepseek", &prices).unwrap();
    send(c.as_mut(), &prompt(0));
    assert_eq!(send(c.as_mut(), &prompt(2 * h)).cached_tokens, 640);
    let late = send(c.as_mut(), &prompt(6 * h + 1));
    assert_eq!(late.cached_tokens, 0);
    assert_eq!(late.stop.unwrap().reason, BreakReason::TtlExpired);
}

#[test]
fn deepseek_does_not_cache_the_reply() {
    // The guide's multi-round example hits the first round's system + user, not the reply.
    let prices = PriceTable::bundled();
    let mut c = cache::build("deepseek", &prices).unwrap();
    let sys = seg(1, Level::System, 0, 500, None);
    let user = seg(2, Level::Messages, 1_000, 200, None);
    let reply = seg(3, Level::Messages, 2_000, 300, None);
    let mut first = request("deepseek-chat", 0, vec![sys.clone(), user.clone()]);
    first.reply = vec![reply.clone()];
    send(c.as_mut(), &first);
    let out = send(
        c.as_mut(),
        &request(
            "deepseek-chat",
            MIN,
            vec![sys, user, reply, seg(4, Level::Messages, 3_000, 50, None)],
        ),
    );
    // The first prompt, 700 tokens -> 10 units = 640.
    assert_eq!(out.cached_tokens, 640);
}

// ---------------------------------------------------------------------------------------------
// Gemini implicit (ai.google.dev/gemini-api/docs/caching, 2026-10-13)

#[test]
fn gemini_implicit_below_the_model_minimum_reads_nothing() {
    let prices = PriceTable::bundled();
    // Gemini 2.5 Pro: minimum 2,048. A 2,000-token prompt resent: 0.
    let mut c = cache::build("gemini", &prices).unwrap();
    let p = request(
        "gemini-2.5-pro",
        0,
        vec![seg(1, Level::System, 0, 2000, None)],
    );
    let first = send(c.as_mut(), &p);
    assert_eq!(first.cache_write_tokens(), 0);
    let mut again = p.clone();
    again.sent_at_ms = MIN;
    let out = send(c.as_mut(), &again);
    assert_eq!(out.cached_tokens, 0);
    assert_eq!(out.stop.unwrap().reason, BreakReason::BelowMinimum);
    // Gemini 3.1 Pro: minimum 4,096; a 3,000-token prompt resent: 0 as well; 2.5 Pro caches it.
    for (model, want) in [("gemini-3.1-pro-preview", 0), ("gemini-2.5-pro", 3000)] {
        let mut c = cache::build("gemini", &prices).unwrap();
        let p = |t| request(model, t, vec![seg(1, Level::System, 0, 3000, None)]);
        send(c.as_mut(), &p(0));
        assert_eq!(send(c.as_mut(), &p(MIN)).cached_tokens, want, "{model}");
    }
}

#[test]
fn gemini_implicit_reads_the_shared_prefix_with_no_write_fee() {
    let prices = PriceTable::bundled();
    let mut c = cache::build("gemini", &prices).unwrap();
    let ctx = seg(1, Level::System, 0, 5000, None);
    send(c.as_mut(), &request("gemini-2.5-pro", 0, vec![ctx.clone()]));
    let out = send(
        c.as_mut(),
        &request(
            "gemini-2.5-pro",
            MIN,
            vec![ctx, seg(2, Level::Messages, 9_000, 300, None)],
        ),
    );
    assert_eq!(out.cached_tokens, 5000);
    // (300 + 5,000 x 0.1) x $1.25 / 1M = $0.001; nothing for the write.
    let cost = price("gemini-2.5-pro").cost_billed(&out, 0, c.charges_writes());
    assert!(close(cost, 800.0 * 1.25 / 1e6), "{cost}");
    assert_eq!(out.storage_token_seconds, 0);
}

// ---------------------------------------------------------------------------------------------
// Gemini explicit (cachedContents: TTL default 1 h, creation at the input price, storage per
// token-hour; ai.google.dev pricing: 2.5 Pro $4.50 per 1M token-hours)

fn explicit_requests(model: &str, sys_tokens: usize) -> impl Fn(u64, u32, usize) -> Request + '_ {
    let sys = seg(1, Level::System, 0, sys_tokens, None);
    move |t, base, user| {
        request(
            model,
            t,
            vec![
                sys.clone(),
                seg(base as u64, Level::Messages, base, user, None),
            ],
        )
    }
}

#[test]
fn gemini_explicit_bills_creation_and_storage_per_token_hour() {
    let prices = PriceTable::bundled();
    let p = price("gemini-2.5-pro");
    let mut c = cache::build("gemini-explicit", &prices).unwrap();
    let req = explicit_requests("gemini-2.5-pro", 10_000);
    // Request 1 creates the 10,000-token object (tools + system) for 1 h.
    let one = send(c.as_mut(), &req(0, 100_000, 500));
    assert_eq!(
        (
            one.cached_tokens,
            one.write_5m_tokens,
            one.uncached_input_tokens
        ),
        (0, 10_000, 500)
    );
    // Storage: 10,000 tokens x 1 h = 10,000 token-hours x $4.50 / 1M = $0.045.
    assert_eq!(one.storage_token_seconds, 10_000 * 3600);
    assert!(close(p.storage_cost(one.storage_token_seconds), 0.045));
    // Creation 10,000 x 1 + the creating request's read 10,000 x 0.1, + 500 input:
    // 11,500 x $1.25 / 1M = $0.014375; plus storage = $0.059375.
    let cost = p.cost_billed(&one, 0, c.charges_writes());
    assert!(close(cost, 0.014375 + 0.045), "{cost}");
    // Request 2, 30 min later: reads the object; its own messages are input; no storage.
    let two = send(c.as_mut(), &req(30 * MIN, 200_000, 700));
    assert_eq!(
        (
            two.cached_tokens,
            two.cache_write_tokens(),
            two.uncached_input_tokens
        ),
        (10_000, 0, 700)
    );
    assert_eq!(two.storage_token_seconds, 0);
    // (700 + 1,000) x $1.25 / 1M = $0.002125.
    assert!(close(p.cost_billed(&two, 0, true), 0.002125));
    // Request 3, 61 min after creation: the object expired (use does not refresh it): created
    // again, storage again.
    let three = send(c.as_mut(), &req(61 * MIN, 300_000, 100));
    assert_eq!((three.cached_tokens, three.write_5m_tokens), (0, 10_000));
    assert_eq!(three.storage_token_seconds, 10_000 * 3600);
    assert_eq!(three.stop.unwrap().reason, BreakReason::TtlExpired);
}

#[test]
fn gemini_explicit_ttl_and_extension_change_the_storage_bill() {
    let prices = PriceTable::bundled();
    let p = price("gemini-2.5-pro");
    let mut cfg = CacheConfig::from_toml_str(
        "[gemini-explicit]\nttl = \"2h\"\nextend_on_use = true\n",
        "test",
    )
    .unwrap();
    let req = explicit_requests("gemini-2.5-pro", 10_000);
    let mut c = cache::build_with("gemini-explicit", &prices, &cfg).unwrap();
    // 2 h TTL: 20,000 token-hours x $4.50 / 1M = $0.09.
    let one = send(c.as_mut(), &req(0, 100_000, 10));
    assert!(close(p.storage_cost(one.storage_token_seconds), 0.09));
    // Used at 30 min: the expiry moves from 2 h to 2 h 30 min; 10,000 x 0.5 h = 5,000
    // token-hours = $0.0225.
    let two = send(c.as_mut(), &req(30 * MIN, 200_000, 10));
    assert_eq!(two.cached_tokens, 10_000);
    assert_eq!(two.storage_token_seconds, 10_000 * 1800);
    assert!(close(p.storage_cost(two.storage_token_seconds), 0.0225));
    // Extended, it is still alive at 2 h 20 min (it would have expired at 2 h otherwise).
    assert_eq!(
        send(c.as_mut(), &req(140 * MIN, 300_000, 10)).cached_tokens,
        10_000
    );
    // Below the minimum (2.5 Flash: 2,048) no object can be created: all plain input.
    cfg.gemini_explicit.extend_on_use = false;
    let mut c = cache::build_with("gemini-explicit", &prices, &cfg).unwrap();
    let small = explicit_requests("gemini-2.5-flash", 1_500);
    for t in [0, MIN] {
        let o = send(c.as_mut(), &small(t, 100_000, 100));
        assert_eq!((o.cached_tokens, o.cache_write_tokens()), (0, 0));
        assert_eq!(o.uncached_input_tokens, 1_600);
        assert_eq!(o.storage_token_seconds, 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Bedrock (docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html)

/// System block A (1,500 tokens, `cachePoint`), block B (600, `cachePoint`), then 300 tokens
/// of messages carrying the simplified-mode checkpoint.
fn bedrock_request(model: &str, t: u64) -> Request {
    request(
        model,
        t,
        vec![
            seg(1, Level::System, 0, 1500, Some(Ttl::FiveMinutes)),
            seg(2, Level::System, 10_000, 600, Some(Ttl::FiveMinutes)),
            seg(3, Level::Messages, 20_000, 300, None),
        ],
    )
}

#[test]
fn bedrock_minimum_applies_per_checkpoint() {
    let prices = PriceTable::bundled();
    // Sonnet 4.6 on Bedrock: 1,024 per checkpoint. A at 1,500 qualifies; B ends 600 after A and
    // the final checkpoint 900 after A: neither is cached. Writes 1,500; 900 are plain input.
    let mut c = cache::build("bedrock", &prices).unwrap();
    let one = send(c.as_mut(), &bedrock_request("claude-sonnet-4-6", 0));
    assert_eq!(
        (
            one.cached_tokens,
            one.write_5m_tokens,
            one.uncached_input_tokens
        ),
        (0, 1500, 900)
    );
    let two = send(c.as_mut(), &bedrock_request("claude-sonnet-4-6", MIN));
    assert_eq!(
        (
            two.cached_tokens,
            two.cache_write_tokens(),
            two.uncached_input_tokens
        ),
        (1500, 0, 900)
    );
    // The same request on Anthropic's API (automatic mode, Sonnet 4.6 minimum 2,048 of the
    // whole prefix): A (1,500) is too short, B (2,100) and the last block (2,400) are cached.
    let mut api = cache::build("anthropic-auto", &prices).unwrap();
    let one = send(api.as_mut(), &bedrock_request("claude-sonnet-4-6", 0));
    assert_eq!((one.write_5m_tokens, one.uncached_input_tokens), (2400, 0));
}

#[test]
fn bedrock_minimums_come_from_bedrocks_table() {
    let prices = PriceTable::bundled();
    // One checkpoint on a 1,500-token prefix: cached on Bedrock's Sonnet 4.6 (1,024), not on
    // Bedrock's Haiku 4.5 (4,096).
    for (model, written) in [("claude-sonnet-4-6", 1500), ("claude-haiku-4-5", 0)] {
        let mut c = cache::build("bedrock", &prices).unwrap();
        let r = request(
            model,
            0,
            vec![seg(1, Level::System, 0, 1500, Some(Ttl::FiveMinutes))],
        );
        assert_eq!(send(c.as_mut(), &r).write_5m_tokens, written, "{model}");
    }
    // 5 min TTL: resent after 6 min, nothing is read.
    let mut c = cache::build("bedrock", &prices).unwrap();
    send(c.as_mut(), &bedrock_request("claude-sonnet-4-6", 0));
    let late = send(c.as_mut(), &bedrock_request("claude-sonnet-4-6", 6 * MIN));
    assert_eq!(late.cached_tokens, 0);
    assert_eq!(late.stop.unwrap().reason, BreakReason::TtlExpired);
    // The spacing rule can be switched off in a cache-config file: then B and the last block
    // qualify on their whole prefix (2,100 and 2,400 >= 1,024).
    let cfg = CacheConfig::from_toml_str("[bedrock]\ncheckpoint_spacing = false\n", "t").unwrap();
    let mut c = cache::build_with("bedrock", &prices, &cfg).unwrap();
    let one = send(c.as_mut(), &bedrock_request("claude-sonnet-4-6", 0));
    assert_eq!(one.write_5m_tokens, 2400);
}

// ---------------------------------------------------------------------------------------------
// Data

#[test]
fn provider_entries_carry_sources_dates_and_storage_prices() {
    let prices = PriceTable::bundled();
    for m in [
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-3.1-pro-preview",
        "deepseek-chat",
        "deepseek-reasoner",
        "gpt-5-codex",
        "gpt-5.3-codex",
        "gpt-5.4",
    ] {
        let p = prices.get(m).unwrap_or_else(|| panic!("{m} missing"));
        assert!(!p.source.is_empty() && !p.date.is_empty(), "{m}");
    }
    assert_eq!(price("gemini-2.5-pro").storage_per_mtok_hour, 4.5);
    assert_eq!(price("gemini-2.5-flash").storage_per_mtok_hour, 1.0);
    assert_eq!(price("claude-sonnet-4-5").storage_per_mtok_hour, 0.0);
    // Cached reads at a tenth: $0.125 (2.5 Pro), $0.03 (2.5 Flash), $0.028 (DeepSeek).
    for (m, cached) in [
        ("gemini-2.5-pro", 0.125),
        ("gemini-2.5-flash", 0.03),
        ("deepseek-chat", 0.028),
    ] {
        let p = price(m);
        assert!(close(p.input * p.read, cached), "{m}");
    }
    let cfg = CacheConfig::from_toml_str("[deepseek]\nunit = 0\n", "bad.toml");
    assert!(cfg
        .unwrap_err()
        .to_string()
        .contains("[deepseek]: unit must be at least 1"));
}

#[test]
fn the_documented_cache_config_example_parses() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cache-models.md"),
    )
    .unwrap();
    let section = &doc[doc.find("## `--cache-config FILE`").expect("section")..];
    let block_at = section
        .find("```toml\n[gemini]")
        .expect("the providers' toml block");
    let start = block_at + 8;
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let cfg = CacheConfig::from_toml_str(block, "docs/cache-models.md").unwrap();
    assert_eq!(cfg.gemini.min_tokens, Some(2048));
    assert_eq!(
        cfg.bedrock.model_min_cacheable.get("claude-sonnet-4-5"),
        Some(&4096)
    );
    assert!(cfg.bedrock.checkpoint_spacing);
}

#[test]
fn gemini_explicit_objects_are_per_model() {
    let prices = PriceTable::bundled();
    let mut c = cache::build("gemini-explicit", &prices).unwrap();
    let pro = explicit_requests("gemini-2.5-pro", 5_000);
    let flash = explicit_requests("gemini-2.5-flash", 5_000);
    assert_eq!(
        send(c.as_mut(), &pro(0, 100_000, 10)).write_5m_tokens,
        5_000
    );
    // The same content on another model needs its own object.
    let other = send(c.as_mut(), &flash(MIN, 200_000, 10));
    assert_eq!((other.cached_tokens, other.write_5m_tokens), (0, 5_000));
    assert_eq!(other.stop.unwrap().reason, BreakReason::ModelChanged);
    assert_eq!(
        send(c.as_mut(), &pro(2 * MIN, 300_000, 10)).cached_tokens,
        5_000
    );
}

#[test]
fn deepseek_ttft_reproduces_the_128k_announcement() {
    // news0802: a 128K prompt's first token in 13 s uncached, 0.5 s cached.
    let table = plancache::cache::LatencyTable::bundled();
    let d = table.for_provider("deepseek");
    let uncached = CacheOutcome {
        prompt_tokens: 128_000,
        ..CacheOutcome::default()
    };
    let cached = CacheOutcome {
        prompt_tokens: 128_000,
        cached_tokens: 128_000,
        ..CacheOutcome::default()
    };
    assert!((d.ttft_ms(&uncached) - 13_000.0).abs() < 1.0);
    assert!((d.ttft_ms(&cached) - 500.0).abs() < 1.0);
}

/// Replays a fixture scenario under `permission-mode`: (prompt, cached, written, cost) per request.
fn replay_fixture(name: &str, cache_name: &str, config: &CacheConfig) -> Vec<(u64, u64, u64, f64)> {
    use plancache::engine::{self, ReplayEnv};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let session = plancache::scenario::Session::load(&path, None).unwrap();
    let strategy = plancache::strategy::parse_list("permission-mode").unwrap();
    let env = ReplayEnv::default();
    let mut c = cache::build_with(cache_name, &env.prices, config).unwrap();
    let replay = engine::replay(&session, strategy[0].as_ref(), c.as_mut(), &env).unwrap();
    replay
        .rows
        .iter()
        .map(|r| {
            (
                r.prompt_tokens,
                r.cached_tokens,
                r.cache_write_tokens,
                r.cost_usd,
            )
        })
        .collect()
}

#[test]
fn a_70_minute_review_under_gemini_caching() {
    // Prompts: 500 + 8,000 + 400 = 8,900; then + 100 reply + 300 feedback = 9,300.
    let mut cfg = CacheConfig::default();
    // Implicit: the 70 min gap is far beyond any short lifetime: request 2 reads nothing.
    let implicit = replay_fixture("gemini-long-review.toml", "gemini", &cfg);
    assert_eq!(
        implicit.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        vec![(8_900, 0), (9_300, 0)]
    );
    // Explicit, 1 h TTL: the object expires during the review and is created again.
    // Request 1: 8,500 x 1.1 + 400 = 9,750 units; request 2: 8,500 x 1.1 + 800 = 10,150 units;
    // x $1.25/1M = $0.024875. Storage 2 x 8,500 token-hours x $4.50/1M = $0.0765. Output
    // 2 x 100 x $10/1M = $0.002. Total $0.103375.
    let one_hour = replay_fixture("gemini-long-review.toml", "gemini-explicit", &cfg);
    assert_eq!(
        one_hour.iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
        vec![(0, 8_500), (0, 8_500)]
    );
    let total: f64 = one_hour.iter().map(|r| r.3).sum();
    assert!((total - 0.103375).abs() < 1e-9, "{total}");
    // Explicit, 2 h TTL: request 2 reads the object. Request 2: 8,500 x 0.1 + 800 = 1,650
    // units; inputs (9,750 + 1,650) x $1.25/1M = $0.01425; storage 17,000 token-hours =
    // $0.0765 (the same as two 1 h objects); output $0.002. Total $0.09275.
    cfg.gemini_explicit.ttl = std::time::Duration::from_secs(2 * 3600);
    let two_hours = replay_fixture("gemini-long-review.toml", "gemini-explicit", &cfg);
    assert_eq!(
        two_hours.iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
        vec![(0, 8_500), (8_500, 0)]
    );
    let total: f64 = two_hours.iter().map(|r| r.3).sum();
    assert!((total - 0.09275).abs() < 1e-9, "{total}");
}

#[test]
fn bedrock_with_claude_codes_layout_keeps_bedrocks_minimums() {
    // Claude Code's layout on Bedrock: breakpoints on the last tool (500), the system block
    // (8,500) and the last message (8,900), all 5 min. Per checkpoint on Haiku 4.5 (4,096):
    // 500 is too short; 8,500 is 8,500 after nothing cached; 8,900 is only 400 after it.
    let prices = PriceTable::bundled();
    let cfg = CacheConfig::from_toml_str("[bedrock]\nlayout = \"claude-code\"\n", "t").unwrap();
    let mut c = cache::build_with("bedrock", &prices, &cfg).unwrap();
    let req = request(
        "claude-haiku-4-5",
        0,
        vec![
            seg(1, Level::Tools, 0, 500, None),
            seg(2, Level::System, 1_000, 8_000, None),
            seg(3, Level::Messages, 20_000, 400, None),
        ],
    );
    let one = send(c.as_mut(), &req);
    assert_eq!(
        (
            one.write_5m_tokens,
            one.write_1h_tokens,
            one.uncached_input_tokens
        ),
        (8_500, 0, 400)
    );
}

#[test]
fn a_cached_reply_extends_the_match_only_without_reasoning() {
    // DeepSeek with `cache_reply = true` (the V4 guide writes units at the end of the output):
    // prompt 640 + visible reply 320 -> the next prompt (+ 64 more) reads 960 = 15 units;
    // with 500 reasoning tokens before the reply the entry holds reasoning after the prompt,
    // which the next prompt does not repeat: 640.
    let prices = PriceTable::bundled();
    let cfg = CacheConfig::from_toml_str("[deepseek]\ncache_reply = true\n", "t").unwrap();
    let sys = seg(1, Level::System, 0, 640, None);
    let reply = seg(2, Level::Messages, 5_000, 320, None);
    for (reasoning, want) in [(0u64, 960u64), (500, 640)] {
        let mut c = cache::build_with("deepseek", &prices, &cfg).unwrap();
        let mut first = request("deepseek-reasoner", 0, vec![sys.clone()]);
        first.reply = vec![reply.clone()];
        first.output_tokens = 320 + reasoning;
        send(c.as_mut(), &first);
        let next = request(
            "deepseek-reasoner",
            MIN,
            vec![
                sys.clone(),
                reply.clone(),
                seg(3, Level::Messages, 9_000, 64, None),
            ],
        );
        assert_eq!(
            send(c.as_mut(), &next).cached_tokens,
            want,
            "reasoning {reasoning}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 2026 provider facts (data/pricing.toml, each entry's `source` and `date`; docs/pricing.md)

/// A single 5-minute breakpoint at the end of a `len`-token system prompt, sent twice on
/// `anthropic-explicit`: what the second request reads.
fn explicit_reread(model: &str, len: usize) -> u64 {
    let prices = PriceTable::bundled();
    let mut c = cache::build("anthropic-explicit", &prices).unwrap();
    let p = |t| {
        request(
            model,
            t,
            vec![seg(1, Level::System, 0, len, Some(Ttl::FiveMinutes))],
        )
    };
    send(c.as_mut(), &p(0));
    send(c.as_mut(), &p(MIN)).cached_tokens
}

#[test]
fn opus_5_caches_from_512_tokens_and_opus_4_8_from_1024() {
    // whats-new-opus-5: 512 (down from 1,024 on Opus 4.8); whats-new-claude-4-8: 1,024.
    assert_eq!(price("claude-opus-5").min_cacheable, 512);
    assert_eq!(price("claude-opus-4-8").min_cacheable, 1024);
    // A 600-token prefix: over Opus 5's 512, under Opus 4.8's 1,024.
    assert_eq!(explicit_reread("claude-opus-5", 600), 600);
    assert_eq!(explicit_reread("claude-opus-4-8", 600), 0);
    assert_eq!(explicit_reread("claude-opus-4-8", 1100), 1100);
}

#[test]
fn opus_4_7_and_4_8_cost_what_anthropics_price_list_says() {
    // $5 in, $6.25 5m write (1.25x), $10 1h write (2x), $0.50 hit (0.1x), $25 out.
    for m in ["claude-opus-4-7", "claude-opus-4-8", "claude-opus-5"] {
        let p = price(m);
        assert_eq!((p.input, p.output), (5.0, 25.0), "{m}");
        assert!(close(p.input * p.write_5m, 6.25), "{m}");
        assert!(close(p.input * p.write_1h, 10.0), "{m}");
        assert!(close(p.input * p.read, 0.5), "{m}");
    }
    // Opus 4.7's 4,096 minimum is a third-party figure: the entry says so.
    let p = price("claude-opus-4-7");
    assert_eq!(p.min_cacheable, 4096);
    assert_eq!(p.confidence, "mixed");
    assert!(p.note.contains("third-party"), "{}", p.note);
}

#[test]
fn opus_5_5_reads_cost_a_twentieth_of_input() {
    // $4 in, $5 5m write, $8 1h write, $0.20 read, $20 out: read = 0.20 / 4 = 0.05.
    let p = price("claude-opus-5-5");
    assert_eq!((p.input, p.output, p.read), (4.0, 20.0, 0.05));
    assert!(close(p.input * p.write_5m, 5.0) && close(p.input * p.write_1h, 8.0));
    // 100,000 tokens read: 100,000 x 0.05 x $4 / 1M = $0.02 (Opus 5 at 0.1 x $5: $0.05).
    let read = CacheOutcome {
        prompt_tokens: 100_000,
        cached_tokens: 100_000,
        ..CacheOutcome::default()
    };
    assert!(close(p.cost(&read, 0), 0.02));
    assert!(close(price("claude-opus-5").cost(&read, 0), 0.05));
}

#[test]
fn bedrock_regional_sonnet_4_5_is_priced_about_10_percent_above_global() {
    // AWS: global cross-Region inference is ~10% cheaper than geographic for Sonnet 4.5.
    let global = price("global.anthropic.claude-sonnet-4-5-20250929-v1:0");
    let regional = price("eu.anthropic.claude-sonnet-4-5-20250929-v1:0");
    assert_eq!(global.name, "global.anthropic.claude-sonnet-4-5");
    assert_eq!(regional.name, "us.anthropic.claude-sonnet-4-5");
    assert_eq!((global.input, global.output), (3.0, 15.0));
    assert!(regional.input > global.input && regional.output > global.output);
    assert!(close(regional.input / global.input, 1.1));
    assert!(close(regional.output / global.output, 1.1));
    // 10,000 uncached input + 1,000 out: global $0.045, regional $0.0495.
    let cold = CacheOutcome {
        prompt_tokens: 10_000,
        uncached_input_tokens: 10_000,
        ..CacheOutcome::default()
    };
    assert!(close(global.cost(&cold, 1000), 0.045));
    assert!(close(regional.cost(&cold, 1000), 0.0495));
}

#[test]
fn deepseek_v4_hits_cost_2_percent_on_flash_and_a_thirtieth_on_pro() {
    // Peak: flash $0.30 miss / $0.006 hit / $1.20 out; pro $1.32 / $0.044 / $3.96.
    let flash = price("deepseek-v4-flash");
    assert_eq!(flash.name, "deepseek-flash");
    assert_eq!((flash.input, flash.read, flash.output), (0.3, 0.02, 1.2));
    assert!(close(flash.input * flash.read, 0.006));
    let pro = price("deepseek-v4-pro");
    assert!(close(pro.input * pro.read, 0.044));
    assert_eq!(pro.output, 3.96);
    // No write fee on DeepSeek; the reply is not cached (deepseek_does_not_cache_the_reply).
    assert_eq!((flash.write_5m, pro.write_5m), (1.0, 1.0));
}

#[test]
fn gpt_5_6_bills_writes_at_1_25x_and_earlier_openai_models_do_not() {
    // OpenAI prompt-caching guide: writes cost 1.25x input on GPT-5.6 and later, nothing
    // extra before. 10,000 written tokens at $5 (5.6 sol): 10,000 x 1.25 x $5 / 1M = $0.0625.
    let prices = PriceTable::bundled();
    let c = cache::build("openai", &prices).unwrap();
    let written = CacheOutcome {
        prompt_tokens: 10_000,
        write_5m_tokens: 10_000,
        ..CacheOutcome::default()
    };
    let sol = price("gpt-5.6-sol");
    assert_eq!(sol.write_5m, 1.25);
    assert!(close(sol.cost_billed(&written, 0, true), 0.0625));
    // gpt-5.4 ($2.50): written tokens are plain input, $0.025.
    let g54 = price("gpt-5.4");
    assert_eq!(g54.write_5m, 1.0);
    assert!(close(
        g54.cost_billed(&written, 0, c.charges_writes()),
        0.025
    ));
}

fn third_party_table() -> PriceTable {
    let mut t = PriceTable::bundled();
    t.merge_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/pricing-third-party.toml"),
    )
    .unwrap();
    t
}

#[test]
fn every_entry_has_a_source_a_date_and_a_known_confidence() {
    let bundled = PriceTable::bundled();
    let extra = third_party_table();
    for t in [&bundled, &extra] {
        for name in t.names() {
            let m = t.resolve(name).unwrap();
            assert!(!m.source.is_empty(), "{name}: no source");
            assert!(!m.date.is_empty(), "{name}: no date");
            assert!(
                ["", "provider", "third-party", "mixed"].contains(&m.confidence.as_str()),
                "{name}: confidence `{}`",
                m.confidence
            );
            // A third-party or mixed figure says what it rests on.
            if !m.confidence.is_empty() && m.confidence != "provider" {
                assert!(!m.note.is_empty(), "{name}: no note");
            }
        }
    }
    // The third-party-only models are out of the bundled table, in the opt-in file.
    for m in [
        "gpt-5.2-codex",
        "gpt-5.1-codex-mini",
        "gpt-5.4-mini",
        "gpt-5.5",
    ] {
        assert!(bundled.resolve(m).is_none(), "{m} is bundled");
        assert_eq!(extra.resolve(m).unwrap().confidence, "third-party", "{m}");
    }
    assert_eq!(extra.resolve("gpt-5.2-codex").unwrap().input, 1.75);
}

#[test]
fn an_unknown_model_is_priced_by_its_familys_nearest_known_model_with_a_warning() {
    let t = PriceTable::bundled();
    // Opus 4.9: nearest below in claude-opus-4.x is 4.8.
    assert_eq!(t.get("claude-opus-4-9").unwrap().name, "claude-opus-4-8");
    // gpt-5.2-codex (bundled table): below it only gpt-5-codex (5.0); with the third-party
    // file, gpt-5.3-codex-mini finds gpt-5.1-codex-mini.
    assert_eq!(t.get("gpt-5.2-codex").unwrap().name, "gpt-5-codex");
    assert!(t.get("gpt-5.3-codex-mini").is_none());
    let extra = third_party_table();
    assert_eq!(
        extra.get("gpt-5.3-codex-mini").unwrap().name,
        "gpt-5.1-codex-mini"
    );
    // Dated ids and other families: a dated Haiku 4.7 is Haiku 4.5; Sonnet 3.5 (old naming)
    // is Sonnet 3.7 (the only 3.x Sonnet, above it).
    assert_eq!(
        t.get("claude-haiku-4-7-20261001").unwrap().name,
        "claude-haiku-4-5"
    );
    assert_eq!(
        t.get("claude-3-5-sonnet").unwrap().name,
        "claude-3-7-sonnet"
    );
    // Never across a major version or a tier.
    assert!(t.get("claude-opus-6").is_none());
    assert!(t.get("gpt-5-turbo").is_none());
    // Every guess is recorded, once, with the assumption named.
    let w = t.assumptions();
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(w.iter().any(|s| s.starts_with(
        "model `claude-opus-4-9` is not in the pricing table: priced as `claude-opus-4-8`"
    )));
    assert!(w.iter().all(|s| s.contains("--pricing FILE")));
}

#[test]
fn strict_pricing_refuses_the_family_guess_and_names_it() {
    let mut t = PriceTable::bundled();
    t.set_strict(true);
    assert!(t.get("claude-opus-4-9").is_none());
    assert!(t.assumptions().is_empty());
    let e = t.unknown_model("claude-opus-4-9");
    assert!(e.starts_with("model `claude-opus-4-9` is not in the pricing table (--strict-pricing: not priced as its family's nearest known model `claude-opus-4-8`)"), "{e}");
    // Known models are unaffected.
    assert_eq!(t.get("claude-opus-4-8").unwrap().input, 5.0);
}

// ---------------------------------------------------------------------------------------------
// The same through the binary: a warning by default, exit 2 under --strict-pricing.

fn plancache(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// scenarios/auth-plan.toml with its model replaced by `model`, in `dir`.
fn scenario_on(dir: &std::path::Path, model: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("scenarios/auth-plan.toml")).unwrap();
    let text = text.replace(
        "model = \"claude-sonnet-4-5\"",
        &format!("model = \"{model}\""),
    );
    let p = dir.join("opus49.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn run_and_report_warn_on_a_family_guess_and_refuse_it_under_strict_pricing() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario_on(dir.path(), "claude-opus-4-9");
    let out_dir = dir.path().join("out");
    let out_dir = out_dir.display().to_string();
    let cmds: [Vec<&str>; 2] = [
        vec!["run", &sc, "--cache", "anthropic", "--out", &out_dir],
        vec!["report", &sc, "--out", &out_dir],
    ];
    for args in &cmds {
        let ok = plancache(args);
        let err = String::from_utf8_lossy(&ok.stderr);
        assert_eq!(ok.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains("warning: model `claude-opus-4-9` is not in the pricing table: priced as `claude-opus-4-8`"),
            "{args:?}: {err}"
        );
        // Announced once, however many strategies and caches priced it.
        assert_eq!(
            err.matches("priced as `claude-opus-4-8`").count(),
            1,
            "{err}"
        );
        let mut strict = args.clone();
        strict.push("--strict-pricing");
        let refused = plancache(&strict);
        let err = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{strict:?}: {err}");
        assert!(
            err.contains("claude-opus-4-9") && err.contains("--pricing FILE"),
            "{err}"
        );
        assert!(err.contains("--strict-pricing"), "{err}");
    }
}

#[test]
fn compare_validate_account_and_sweep_follow_strict_pricing_too() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario_on(dir.path(), "claude-opus-4-9");
    let base = dir.path().join("base").display().to_string();
    assert_eq!(
        plancache(&["run", &sc, "--cache", "anthropic", "--out", &base])
            .status
            .code(),
        Some(0)
    );
    // The plan-mode transcript fixture with every request on an unknown Opus.
    let transcript =
        std::fs::read_to_string(root.join("tests/fixtures/transcripts/plan_mode.jsonl"))
            .unwrap()
            .replace(
                "\"model\": \"claude-sonnet-4-5-20250929\"",
                "\"model\": \"claude-opus-4-9\"",
            );
    let t = dir.path().join("t.jsonl");
    std::fs::write(&t, transcript).unwrap();
    let t = t.display().to_string();
    // A two-point sweep on the unknown model.
    let sweep = std::fs::read_to_string(root.join("sweeps/keepalive.toml"))
        .unwrap()
        .replace(
            "model = \"claude-sonnet-4-5\"",
            "model = \"claude-opus-4-9\"",
        )
        .replace(
            "[\"2m\", \"4m\", \"7m\", \"15m\", \"30m\", \"70m\"]",
            "[\"2m\"]",
        )
        .replace("rejections = [0, 2]", "rejections = [0]")
        .replace("ttl = [\"5m\", \"1h\"]", "ttl = [\"5m\"]");
    let s = dir.path().join("s.toml");
    std::fs::write(&s, sweep).unwrap();
    let s = s.display().to_string();
    let sweep_out = dir.path().join("sw").display().to_string();
    let cmds: [Vec<&str>; 4] = [
        vec!["compare", &sc, "--baseline", &base, "--cache", "anthropic"],
        vec!["validate", &t],
        vec!["account", &t],
        vec!["sweep", &s, "--out", &sweep_out],
    ];
    for args in &cmds {
        let ok = plancache(args);
        let err = String::from_utf8_lossy(&ok.stderr);
        assert_ne!(ok.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("priced as `claude-opus-4-8`"),
            "{args:?}: {err}"
        );
        let mut strict = args.clone();
        strict.push("--strict-pricing");
        let refused = plancache(&strict);
        let err = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{strict:?}: {err}");
        assert!(
            err.contains("model `claude-opus-4-9` is not in the pricing table (--strict-pricing"),
            "{strict:?}: {err}"
        );
    }
}
