//! Pings leave the reply metrics: a summary's requests, tokens, hit rate and TTFT count the
//! replies (assistant steps); keep-alive pings and compaction requests are summed in columns of
//! their own (the cost stays the session's whole cost) (`pings`, `ping_prompt_tokens`, `ping_cost_usd`, `compactions`, ...),
//! appended after the contract columns of summary.csv. The per-request figures are derived by
//! hand in tests/steps.rs; here they are summed by hand.

use std::path::Path;

use plancache::cache::{self, CacheConfig};
use plancache::engine::{self, Replay, ReplayEnv};
use plancache::metrics::{RequestKind, SUMMARY_COLUMNS, SUMMARY_EXTRA_COLUMNS};
use plancache::prompt::Ttl;
use plancache::scenario::Session;
use plancache::strategy::PermissionMode;

fn replay(name: &str, caches: CacheConfig) -> Replay {
    let session = Session::load(Path::new(&format!("scenarios/{name}.toml")), None).unwrap();
    let env = ReplayEnv {
        caches,
        ..ReplayEnv::default()
    };
    let mut cache = cache::build_with("anthropic", &env.prices, &env.caches).unwrap();
    engine::replay(&session, &PermissionMode, cache.as_mut(), &env).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn a_ping_is_summed_apart_from_the_replies() {
    // keepalive-review under permission-mode, `anthropic` at 5 minutes (tests/steps.rs):
    // R1 12,799 prompt / 0 cached / $0.04934625; R2 15,889 / 12,799 / $0.0259272; the ping
    // 15,889 / 15,889 / $0.0047817; R3 17,432 / 15,889 / $0.01505295; R4 17,772 / 17,432 /
    // $0.0077046.
    let mut caches = CacheConfig::default();
    caches.anthropic.system_ttl = Ttl::FiveMinutes;
    caches.anthropic.message_ttl = Ttl::FiveMinutes;
    let r = replay("keepalive-review", caches);
    let kinds: Vec<RequestKind> = r.rows.iter().map(|x| x.kind).collect();
    use RequestKind::{Keepalive, Reply};
    assert_eq!(kinds, [Reply, Reply, Keepalive, Reply, Reply]);
    let s = r.summary();
    // Replies: 4 requests, 12,799 + 15,889 + 17,432 + 17,772 = 63,892 prompt tokens, of which
    // 0 + 12,799 + 15,889 + 17,432 = 46,120 cached: 72.18% (with the ping, 79,781 and 62,009:
    // 77.72%, the figure the ping inflated).
    assert_eq!(s.requests, 4);
    assert_eq!((s.prompt_tokens, s.cached_tokens), (63_892, 46_120));
    assert_eq!(
        (s.recomputed_tokens, s.cache_write_tokens),
        (17_772, 17_772)
    );
    assert_eq!(s.output_tokens, 90 + 700 + 300 + 80);
    assert!(close(s.hit_rate, 46_120.0 / 63_892.0), "{}", s.hit_rate);
    assert_eq!(s.cells()[9], "0.7218");
    // Cost, the session's whole: 0.04934625 + 0.0259272 + 0.01505295 + 0.0077046 = $0.098031
    // for the replies, plus the ping's $0.0047817 = $0.1028127.
    assert!(close(s.cost_usd, 0.102_812_7), "{}", s.cost_usd);
    // TTFT: the mean over the four replies, not over the ping too.
    let replies: Vec<f64> = r
        .rows
        .iter()
        .filter(|x| x.is_reply())
        .map(|x| x.ttft_ms)
        .collect();
    assert!(close(s.ttft_ms, replies.iter().sum::<f64>() / 4.0));
    assert!(!close(
        s.ttft_ms,
        r.rows.iter().map(|x| x.ttft_ms).sum::<f64>() / 5.0
    ));
    // The ping's own columns: 1 ping of 15,889 tokens, $0.0047817.
    assert_eq!((s.pings.requests, s.pings.prompt_tokens), (1, 15_889));
    assert!(close(s.pings.cost_usd, 0.004_781_7));
    assert_eq!(
        s.extra_cells(),
        ["1", "15889", "0.004782", "0", "0", "0.000000"]
    );
}

#[test]
fn a_compaction_request_is_summed_apart_from_the_replies() {
    // compact-summary under permission-mode, `anthropic` (tests/steps.rs): replies of 12,234,
    // 15,354, 18,954 and 14,584 prompt tokens, reading 0, 12,234, 15,354 and 12,084 (the new
    // conversation reads the tools and system); the summarisation request 21,256 tokens,
    // $0.0554982.
    let r = replay("compact-summary", CacheConfig::default());
    let s = r.summary();
    assert_eq!(s.requests, 4);
    assert_eq!(
        (s.prompt_tokens, s.cached_tokens),
        (12_234 + 15_354 + 18_954 + 14_584, 12_234 + 15_354 + 12_084)
    );
    assert_eq!(s.cells()[9], "0.6490");
    assert_eq!(
        (s.compactions.requests, s.compactions.prompt_tokens),
        (1, 21_256)
    );
    assert!(close(s.compactions.cost_usd, 0.055_498_2));
    assert_eq!(s.pings.requests, 0);
}

#[test]
fn summary_csv_appends_the_ping_and_compaction_columns_after_the_contract() {
    assert_eq!(
        SUMMARY_COLUMNS.join(","),
        "scenario,strategy,cache,requests,prompt_tokens,cached_tokens,cache_write_tokens,recomputed_tokens,output_tokens,hit_rate,cost_usd,ttft_ms"
    );
    assert_eq!(
        SUMMARY_EXTRA_COLUMNS.join(","),
        "pings,ping_prompt_tokens,ping_cost_usd,compactions,compaction_prompt_tokens,compaction_cost_usd"
    );
}
