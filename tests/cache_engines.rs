//! The cache models agree with the engines' own code and the providers' documented rules on the
//! cases where they used to differ (issue 11), each with hand-derived numbers: the last sampled
//! token (vLLM), pool accounting near capacity (vLLM), reasoning tokens (every automatic cache),
//! the TTL an Anthropic hit renews, OpenAI retention from last use, and a sub-minimum 1 h
//! breakpoint before a 5 m one.

use std::sync::Arc;

use plancache::cache::{
    self, AgeFrom, BreakReason, BreakpointCache, BreakpointConfig, CacheConfig, CacheModel,
    CacheOutcome, PagedCache, PagedConfig, PriceTable, RadixCache, RadixConfig,
};
use plancache::prompt::{Level, Request, RequestSettings, Role, Segment, SegmentKind, Ttl};

const MIN: u64 = 60_000;

/// A segment of `len` tokens `base, base+1, ...` (distinct bases give distinct content).
fn seg(id: u64, base: u32, len: u32, bp: Option<Ttl>) -> Arc<Segment> {
    Arc::new(Segment {
        id,
        level: Level::Messages,
        kind: SegmentKind::Message(Role::User),
        label: format!("seg{id}"),
        tokens: (base..base + len).collect::<Vec<_>>().into(),
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

/// `r` with a visible reply and `reasoning` reasoning tokens.
fn replying(mut r: Request, reply: &Arc<Segment>, reasoning: u64) -> Request {
    r.output_tokens = reply.len() as u64 + reasoning;
    r.reply = vec![reply.clone()];
    r
}

/// Looks a request up and stores it: the response begins 1 s after it is sent, ends after 2 s.
fn send(cache: &mut dyn CacheModel, req: &Request) -> CacheOutcome {
    let out = cache.lookup(req);
    cache.store(req, &out, req.sent_at_ms + 1000, req.sent_at_ms + 2000);
    out
}

fn paged(capacity_blocks: usize) -> PagedCache {
    PagedCache::new(PagedConfig {
        block_size: 16,
        capacity_blocks,
    })
}

// ---- 1. The last sampled token ----

/// Prompt 20 + reply 12: vLLM computes the KV of 20 + 12 − 1 = 31 tokens, one whole block, so
/// the next request (the prompt, the reply and 10 more tokens: 42) reads 16. Caching all 32
/// would make two blocks and read 32 (the cap ⌊41/16⌋ = 2 blocks allows it).
#[test]
fn paged_caches_whole_blocks_of_prompt_plus_reply_minus_one() {
    let prompt = seg(1, 0, 20, None);
    let reply = seg(2, 1000, 12, None);
    let first = replying(request("m", 0, vec![prompt.clone()]), &reply, 0);
    let next = request(
        "m",
        10_000,
        vec![prompt.clone(), reply.clone(), seg(3, 2000, 10, None)],
    );
    let mut c = paged(1024);
    assert_eq!(send(&mut c, &first).cached_tokens, 0);
    assert_eq!(send(&mut c, &next).cached_tokens, 16);
}

/// SGLang with its default overlap scheduler and a stop-token finish inserts all 32 tokens:
/// the next request reads min(32, 42 − 1) = 32. Without the overlap scheduler (or a reply cut
/// by length) the last token is not inserted: 31.
#[test]
fn radix_inserts_the_last_token_only_under_the_overlap_scheduler() {
    let prompt = seg(1, 0, 20, None);
    let reply = seg(2, 1000, 12, None);
    let first = replying(request("m", 0, vec![prompt.clone()]), &reply, 0);
    let next = request(
        "m",
        10_000,
        vec![prompt.clone(), reply.clone(), seg(3, 2000, 10, None)],
    );
    for (last, want) in [(true, 32), (false, 31)] {
        let mut c = RadixCache::new(RadixConfig {
            cache_last_token: last,
            ..RadixConfig::default()
        });
        send(&mut c, &first);
        assert_eq!(
            send(&mut c, &next).cached_tokens,
            want,
            "cache_last_token {last}"
        );
    }
    assert!(RadixConfig::default().cache_last_token);
    let cfg = CacheConfig::from_toml_str("[radix]\ncache_last_token = false\n", "t.toml").unwrap();
    assert!(!cfg.radix.cache_last_token);
}

// ---- 2. Pool accounting near capacity ----

/// A pool of 4 blocks of 16.
/// - A (t = 0): prompt P of 48 tokens, nothing generated: 3 full blocks a1 a2 a3; freed when it
///   completes, tail first, so the free list is a3, a2, a1 (plus one never-used block).
/// - B (t = 10 s): another 20-token prompt and a 1-token reply: 20 + 1 − 1 = 20 computed
///   tokens, ceil(20/16) = 2 blocks: a full one (the unused block) and the partial last one,
///   which takes a pool slot of its own and so evicts the LRU head, a3.
/// - C (t = 20 s): P + 10 tokens reads a1 a2 = 32 (with a3 kept, ⌊57/16⌋ = 3 blocks = 48).
#[test]
fn paged_partial_last_block_takes_a_pool_slot() {
    let p = seg(1, 0, 48, None);
    let mut c = paged(4);
    assert_eq!(
        send(&mut c, &request("m", 0, vec![p.clone()])).cached_tokens,
        0
    );
    let b = replying(
        request("m", 10_000, vec![seg(2, 5000, 20, None)]),
        &seg(3, 6000, 1, None),
        0,
    );
    send(&mut c, &b);
    let out = send(
        &mut c,
        &request("m", 20_000, vec![p.clone(), seg(4, 9000, 10, None)]),
    );
    assert_eq!(out.cached_tokens, 32);
    assert_eq!(out.stop.unwrap().reason, BreakReason::Evicted);
}

// ---- 3. Reasoning tokens ----

/// Prompt 20, then 5 reasoning tokens and a 12-token reply; the next prompt repeats the prompt
/// and the reply and adds 10 (42 tokens). The engines cached prompt + reasoning + reply:
/// - paged: 20 + 17 − 1 = 36 computed tokens, 2 blocks; block 2 holds prompt[16..20],
///   reasoning and reply[..7], which the next prompt's block 2 (prompt[16..20], reply[..12])
///   is not: 16.
/// - radix and ideal: the match ends where the reasoning began, at 20.
#[test]
fn reasoning_ends_the_match_at_the_previous_prompt() {
    let prices = PriceTable::bundled();
    let prompt = seg(1, 0, 20, None);
    let reply = seg(2, 1000, 12, None);
    let first = replying(request("m", 0, vec![prompt.clone()]), &reply, 5);
    let next = request(
        "m",
        10_000,
        vec![prompt.clone(), reply.clone(), seg(3, 2000, 10, None)],
    );
    for (name, want) in [("paged", 16), ("radix", 20), ("ideal", 20)] {
        let mut c = cache::build(name, &prices).unwrap();
        send(c.as_mut(), &first);
        assert_eq!(send(c.as_mut(), &next).cached_tokens, want, "{name}");
    }
    // OpenAI: prompt 1,100, 50 reasoning, reply 300; the next prompt (1,600) shares 1,100
    // tokens with the cached sequence: 8 whole 128-token units = 1,024 (10 = 1,280 without
    // the reasoning).
    let prompt = seg(1, 0, 1100, None);
    let reply = seg(2, 10_000, 300, None);
    let next = request(
        "gpt-4o",
        60_000,
        vec![prompt.clone(), reply.clone(), seg(3, 20_000, 200, None)],
    );
    for (reasoning, want) in [(50, 1024), (0, 1280)] {
        let mut c = cache::build("openai", &prices).unwrap();
        send(
            c.as_mut(),
            &replying(
                request("gpt-4o", 0, vec![prompt.clone()]),
                &reply,
                reasoning,
            ),
        );
        assert_eq!(send(c.as_mut(), &next).cached_tokens, want, "{reasoning}");
    }
}

/// The reasoning count is what `output_tokens` holds beyond the visible reply.
#[test]
fn reasoning_count_is_output_beyond_the_reply() {
    let r = replying(
        request("m", 0, vec![seg(1, 0, 5, None)]),
        &seg(2, 9, 12, None),
        7,
    );
    assert_eq!(cache::reasoning_tokens(&r), 7);
    assert_eq!(cache::reasoning_tokens(&request("m", 0, vec![])), 0);
}

// ---- 4. Anthropic: a hit renews the entry's own TTL ----

fn explicit() -> BreakpointCache {
    BreakpointCache::new(
        "anthropic-explicit",
        BreakpointConfig::explicit(),
        &PriceTable::bundled(),
    )
}

/// Blocks 1..=n of 200 tokens each, breakpoint `bp` on the last one.
fn blocks(n: u64, bp: Ttl) -> Vec<Arc<Segment>> {
    (1..=n)
        .map(|i| seg(i, i as u32 * 1000, 200, (i == n).then_some(bp)))
        .collect()
}

/// The first 10 blocks (no breakpoint), then one new block `id` carrying a 5 m breakpoint.
fn departing(id: u64) -> Vec<Arc<Segment>> {
    let mut s = blocks(10, Ttl::FiveMinutes);
    s[9] = seg(10, 10_000, 200, None);
    s.push(seg(id, id as u32 * 1000, 200, Some(Ttl::FiveMinutes)));
    s
}

/// R1 (t = 0) writes a 5 m entry at block 10 (2,000 tokens). R2 (t = 1 min) has a 1 h
/// breakpoint on block 15, whose lookback finds that entry: it reads 2,000 and writes the 1 h
/// entry of 3,000 (1,000 at the 1 h price), and the 5 m entry is renewed for its own 5 min from
/// when R2 finished (1 min 2 s): to 6 min 2 s, not to 1 h. R3 departs after block 10: at 5.5 min it still reads 2,000; at 7 min the entry has
/// expired and it reads nothing (it would read 2,000 until 61 min had the hit made it a 1 h
/// entry).
#[test]
fn a_5m_entry_hit_through_a_1h_lookback_expires_after_5_min() {
    let model = "claude-sonnet-4-5";
    let mut bp10 = blocks(10, Ttl::FiveMinutes);
    bp10[9] = seg(10, 10_000, 200, Some(Ttl::FiveMinutes));
    let mut r2 = bp10.clone();
    r2[9] = seg(10, 10_000, 200, None);
    r2.extend((11..=15).map(|i| seg(i, i as u32 * 1000, 200, (i == 15).then_some(Ttl::OneHour))));
    for (at, want) in [(330_000u64, 2000u64), (7 * MIN, 0)] {
        let mut c = explicit();
        let w = send(&mut c, &request(model, 0, bp10.clone()));
        assert_eq!((w.write_5m_tokens, w.write_1h_tokens), (2000, 0));
        let o2 = send(&mut c, &request(model, MIN, r2.clone()));
        assert_eq!(
            (o2.cached_tokens, o2.write_1h_tokens, o2.write_5m_tokens),
            (2000, 1000, 0)
        );
        let o3 = send(&mut c, &request(model, at, departing(16)));
        assert_eq!(o3.cached_tokens, want, "at {at} ms");
        if want == 0 {
            assert_eq!(o3.stop.unwrap().reason, BreakReason::TtlExpired);
        }
    }
}

/// R1 (t = 0) writes a 1 h entry at block 10. R2 (t = 50 min) reads it through a 5 m
/// breakpoint's lookback (block 12): the hit renews the entry's own hour, to ~110 min. R3
/// (t = 100 min) departs after block 10 and still reads its 2,000 tokens (a renewal to the
/// reading breakpoint's 5 m would have left it expiring at 61 min).
#[test]
fn a_hit_renews_a_1h_entry_for_an_hour_through_a_5m_breakpoint() {
    let model = "claude-sonnet-4-5";
    let mut c = explicit();
    let mut r1 = blocks(10, Ttl::OneHour);
    r1[9] = seg(10, 10_000, 200, Some(Ttl::OneHour));
    assert_eq!(send(&mut c, &request(model, 0, r1)).write_1h_tokens, 2000);
    let mut r2 = departing(11);
    r2[10] = seg(11, 11_000, 200, None);
    r2.push(seg(12, 12_000, 200, Some(Ttl::FiveMinutes)));
    assert_eq!(
        send(&mut c, &request(model, 50 * MIN, r2)).cached_tokens,
        2000
    );
    assert_eq!(
        send(&mut c, &request(model, 100 * MIN, departing(13))).cached_tokens,
        2000
    );
}

// ---- 5. OpenAI retention from last use ----

/// A 2,048-token prefix used every 5 minutes: each use renews the 10 min idle timer, and the
/// 1 h maximum counts from the last use, so at 70 min it is still read in full. Counted from
/// the first write (the older reading) it is gone at 65 min.
#[test]
fn an_openai_prefix_used_every_5_min_is_still_cached_at_70_min() {
    let prices = PriceTable::bundled();
    let p = |t| request("gpt-4.1", t, vec![seg(1, 0, 2048, None)]);
    let mut c = cache::build("openai", &prices).unwrap();
    send(c.as_mut(), &p(0));
    for k in 1..=14 {
        assert_eq!(
            send(c.as_mut(), &p(k * 5 * MIN)).cached_tokens,
            2048,
            "at {} min",
            k * 5
        );
    }
    let mut cfg = CacheConfig::default();
    cfg.openai.max_age_from = AgeFrom::FirstWrite;
    let mut c = cache::build_with("openai", &prices, &cfg).unwrap();
    send(c.as_mut(), &p(0));
    for k in 1..=12 {
        assert_eq!(send(c.as_mut(), &p(k * 5 * MIN)).cached_tokens, 2048);
    }
    assert_eq!(send(c.as_mut(), &p(65 * MIN)).cached_tokens, 0);
    let cfg =
        CacheConfig::from_toml_str("[openai]\nmax_age_from = \"first-write\"\n", "t.toml").unwrap();
    assert_eq!(cfg.openai.max_age_from, AgeFrom::FirstWrite);
    assert_eq!(CacheConfig::default().openai.max_age_from, AgeFrom::LastUse);
}

// ---- 6. A sub-minimum 1 h breakpoint before a 5 m one ----

/// Sonnet 4.5 (minimum 1,024): a 1 h breakpoint on a 500-token block, then a 5 m breakpoint
/// after 2,500 more. The order is the one the API requires (1 h first), so the request is
/// accepted. The 1 h breakpoint's prefix is below the minimum: it writes nothing, so no token
/// is billed at the 1 h price (B = A = 0); the 5 m breakpoint writes the whole 3,000-token
/// prefix: C − B = 3,000 at 1.25 × $3 = $0.01125. 4 min later a request adding one block reads
/// those 3,000 through the 5 m entry; 6 min after that (the entry renewed to 9 min 2 s, now 10)
/// nothing is left: the 1 h breakpoint never wrote an entry.
#[test]
fn a_sub_minimum_1h_breakpoint_before_a_5m_one_writes_nothing() {
    let prices = PriceTable::bundled();
    let model = "claude-sonnet-4-5";
    let short = seg(1, 0, 500, Some(Ttl::OneHour));
    let long = seg(2, 1000, 2500, Some(Ttl::FiveMinutes));
    let mut c = explicit();
    let o1 = send(
        &mut c,
        &request(model, 0, vec![short.clone(), long.clone()]),
    );
    assert_eq!(o1.rejected, None);
    assert_eq!(
        (
            o1.cached_tokens,
            o1.write_1h_tokens,
            o1.write_5m_tokens,
            o1.uncached_input_tokens
        ),
        (0, 0, 3000, 0)
    );
    let cost = prices.get(model).unwrap().cost(&o1, 0);
    assert!((cost - 0.01125).abs() < 1e-12, "{cost}");
    let mut unmarked = (*long).clone();
    unmarked.breakpoint = None;
    let unmarked = Arc::new(unmarked);
    let o2 = send(
        &mut c,
        &request(
            model,
            4 * MIN,
            vec![
                short.clone(),
                unmarked.clone(),
                seg(3, 5000, 100, Some(Ttl::FiveMinutes)),
            ],
        ),
    );
    assert_eq!(o2.cached_tokens, 3000);
    let o3 = send(
        &mut c,
        &request(
            model,
            10 * MIN,
            vec![short, unmarked, seg(4, 7000, 100, Some(Ttl::FiveMinutes))],
        ),
    );
    assert_eq!(o3.cached_tokens, 0);
    assert_eq!(o3.stop.unwrap().reason, BreakReason::TtlExpired);
}
