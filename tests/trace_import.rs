//! Block-hash trace import (kv-cache-tester JSON, Mooncake JSONL) and the shared LRU pool.

use std::path::{Path, PathBuf};

use plancache::trace::{self, prefix, TraceError, TraceKind};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/kv-cache-tester/traces")
}

#[test]
fn real_trace_imports_with_hand_checked_figures() {
    let t = trace::read(&fixtures().join("trace_0001.json")).unwrap();
    assert_eq!(t.kind, TraceKind::KvCacheTester);
    assert_eq!(t.id, "trace_0001");
    assert_eq!(t.block_size, 64);
    assert_eq!(t.streams.len(), 1);
    let s = &t.streams[0];
    // Header: "tool_tokens": 12974, "system_tokens": 4243, "requests": 41.
    assert_eq!((s.tool_tokens, s.system_tokens), (12974, 4243));
    assert_eq!(s.requests.len(), 41);
    // Request 0: t 0.0, in 71175, out 169, 1112 hash ids (⌊71175 / 64⌋), api_time 7.34 s.
    let r0 = &s.requests[0];
    assert_eq!(
        (r0.sent_at_ms, r0.input_tokens, r0.output_tokens),
        (0, 71175, 169)
    );
    assert_eq!(r0.hash_ids.len(), 1112);
    assert_eq!(r0.finished_at_ms(), 7340);
    // Request 1: t 19.0, think_time 12.0, 1136 ids, the first 1112 equal to request 0's.
    let r1 = &s.requests[1];
    assert_eq!((r1.sent_at_ms, r1.think_time_ms), (19000, 12000));
    let hits = prefix::consecutive_hits(s, 64);
    assert_eq!(hits[0], 0);
    assert_eq!(hits[1], 1112 * 64);
    // Sum over the 41 requests of min(shared leading ids × 64, in), computed with Python from
    // the file: 4,544,512 of 4,873,373 prompt tokens.
    assert_eq!(hits.iter().sum::<u64>(), 4_544_512);
}

#[test]
fn subagent_entries_become_their_own_stream_on_the_session_clock() {
    let t = trace::read(&fixtures().join("trace_0017.json")).unwrap();
    // 255 entries: 254 main requests and one `subagent` entry (agent_001, 11 requests) at
    // t 21450.819 s whose second request is at t 4.0 s of the subagent.
    assert_eq!(t.streams.len(), 2);
    assert_eq!(t.streams[0].requests.len(), 254);
    let sub = &t.streams[1];
    assert_eq!(sub.name, "agent_001");
    assert_eq!(sub.requests.len(), 11);
    assert_eq!(sub.requests[1].sent_at_ms, 21_450_819 + 4_000);
    assert_eq!((sub.tool_tokens, sub.system_tokens), (7810, 730));
}

#[test]
fn bundled_directory_reads_every_trace() {
    let all = trace::read_path(&fixtures()).unwrap();
    // README of the data: 87 traces, 88 streams, 6,368 requests.
    assert_eq!(all.len(), 87);
    assert_eq!(all.iter().map(|t| t.streams.len()).sum::<usize>(), 88);
    assert_eq!(all.iter().map(|t| t.request_count()).sum::<usize>(), 6368);
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn line(t: u64, input: u64, ids: &[u64]) -> String {
    format!(
        "{{\"timestamp\":{t},\"input_length\":{input},\"output_length\":10,\"hash_ids\":{ids:?}}}\n"
    )
}

#[test]
fn two_sessions_on_a_pool_one_block_too_small_evict_what_lru_says() {
    let dir = tempfile::tempdir().unwrap();
    let a = format!("{}{}", line(0, 1024, &[1, 2]), line(100, 1536, &[1, 2, 3]));
    let b = format!("{}{}", line(50, 1024, &[1, 2]), line(150, 1536, &[1, 2, 4]));
    write(dir.path(), "a.jsonl", &a);
    write(dir.path(), "b.jsonl", &b);
    let traces = trace::read_path(dir.path()).unwrap();
    assert_eq!(traces[0].kind, TraceKind::Mooncake);
    assert_eq!(traces[0].block_size, 512);
    // Ids are local to a session: A's 1 and B's 1 are different blocks (6 distinct: A1 A2 A3
    // B1 B2 B4). Unbounded: A's second request hits A1 A2 (1024), B's hits B1 B2 (1024).
    let free = prefix::replay_pool(&traces, None);
    assert_eq!((free.evictions, free.distinct_blocks), (0, 6));
    let cached = |r: &prefix::PoolReport| {
        r.outcomes
            .iter()
            .map(|o| o.cached_tokens)
            .collect::<Vec<_>>()
    };
    assert_eq!(cached(&free), vec![0, 0, 1024, 1024]);
    // 5 blocks: t100 stores A3 (pool A1 A2 B1 B2 A3, no eviction); t150 B hits B1 B2 and
    // storing B4 evicts the least recently used, A1. Same hits as unbounded.
    let five = prefix::replay_pool(&traces, Some(5));
    assert_eq!(five.evictions, 1);
    assert_eq!(cached(&five), vec![0, 0, 1024, 1024]);
    // 4 blocks, one too small: t100 A hits A1 A2 (LRU order now B1 B2 A1 A2), storing A3 evicts
    // B1. At t150 B1 is gone, so B reads nothing (B2 is resident but past the miss); storing
    // B1, B2, B4 evicts B2, A1, A2 in turn: 4 evictions, B loses 1024 tokens to capacity.
    let four = prefix::replay_pool(&traces, Some(4));
    assert_eq!(four.evictions, 4);
    assert_eq!(cached(&four), vec![0, 0, 1024, 0]);
    assert!((four.hit_rate() - 1024.0 / 5120.0).abs() < 1e-12);
    assert!((free.hit_rate() - 2048.0 / 5120.0).abs() < 1e-12);
}

#[test]
fn unbounded_pool_reads_at_least_the_direct_count_on_the_bundled_traces() {
    // A subset (the 8 smallest-numbered traces) keeps this debug-build test fast; the reader
    // test above reads all 87.
    let all: Vec<_> = [
        "0001", "0009", "0017", "0033", "0041", "0049", "0057", "0065",
    ]
    .iter()
    .map(|n| trace::read(&fixtures().join(format!("trace_{n}.json"))).unwrap())
    .collect();
    let direct: u64 = all
        .iter()
        .flat_map(|t| {
            t.streams
                .iter()
                .map(|s| prefix::consecutive_hits(s, t.block_size))
        })
        .flatten()
        .sum();
    let pool = prefix::replay_pool(&all, None);
    let pooled: u64 = pool.outcomes.iter().map(|o| o.cached_tokens).sum();
    // The pool also finds blocks of any earlier request of the session (e.g. after a
    // compaction returns to an older prefix), so it reads at least the direct count.
    assert!(pooled >= direct, "pool {pooled} < direct {direct}");
    eprintln!(
        "direct {direct} pooled {pooled} distinct {}",
        pool.distinct_blocks
    );
}

#[test]
fn bad_input_names_the_file_and_request() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "bad.json",
        r#"{"id":"x","block_size":64,"requests":[{"t":0,"in":10,"out":1,"hash_ids":[]},{"t":1,"in":"many"}]}"#,
    );
    let e = trace::read(&p).unwrap_err();
    assert!(matches!(e, TraceError::Request { index: 1, .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("bad.json") && msg.contains("request 1") && msg.contains("hint"),
        "{msg}"
    );
    assert_eq!(e.exit_code(), 2);
    let p = write(dir.path(), "nope.json", "[1,2]");
    assert!(matches!(trace::read(&p), Err(TraceError::Format { .. })));
    // Ids that are not unsigned integers, in a request whose array starts as the previous
    // one's (the part read past the shared text), are reported at that request.
    for ids in [
        "[1, 2, -3]",
        "[1, 2, 3.5]",
        "[1, 2, \"3\"]",
        "[1, 2, 99999999999999999999]",
    ] {
        let p = write(
            dir.path(),
            "ids.json",
            &format!(
                r#"{{"requests":[{{"t":0,"in":200,"out":1,"hash_ids":[1, 2]}},{{"t":1,"in":300,"out":1,"hash_ids":{ids}}}]}}"#
            ),
        );
        let e = trace::read(&p).unwrap_err();
        assert!(
            matches!(e, TraceError::Request { index: 1, .. }),
            "{ids}: {e}"
        );
        assert!(e.to_string().contains("ids.json"), "{e}");
    }
}

/// Each stream keeps its requests' ids in one shared buffer (`trace::HashIds`): on every bundled
/// trace, every request of every stream (subagents included) reads back exactly the `hash_ids`
/// of its entry in the file, read here with `serde_json::Value`.
#[test]
fn every_bundled_request_reads_back_its_own_ids() {
    let ids_of = |v: &serde_json::Value| -> Vec<u64> {
        v["hash_ids"]
            .as_array()
            .expect("hash_ids")
            .iter()
            .map(|x| x.as_u64().expect("an id"))
            .collect()
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 87);
    let (mut requests, mut streams) = (0, 0);
    for f in &files {
        let t = trace::read(f).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        // The file's streams as the importer orders them: main, then subagents in file order.
        let mut want: Vec<Vec<Vec<u64>>> = vec![Vec::new()];
        for e in v["requests"].as_array().unwrap() {
            if e["type"] == "subagent" {
                want.push(
                    e["requests"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(ids_of)
                        .collect(),
                );
            } else {
                want[0].push(ids_of(e));
            }
        }
        let got: Vec<Vec<Vec<u64>>> = t
            .streams
            .iter()
            .map(|s| s.requests.iter().map(|r| r.hash_ids.to_vec()).collect())
            .collect();
        assert_eq!(got, want, "{}", f.display());
        streams += got.len();
        requests += got.iter().map(Vec::len).sum::<usize>();
    }
    // The README's count of the bundled set.
    assert_eq!(requests, 6_368);
    assert!(streams > files.len(), "the set has subagent streams");
}
