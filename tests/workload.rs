//! `plancache workload` and `import trace`: many block-hash sessions on one cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use plancache::cache::PriceTable;
use plancache::trace::{self, prefix, Trace};
use plancache::workload::replay::{self, CacheSpec};
use plancache::workload::{self as wl, Arrivals, BuildOptions};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/kv-cache-tester/traces")
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plancache"));
    c.env("NO_COLOR", "1");
    c
}

/// A kv-cache-tester trace with 16-token blocks (the `paged` block size), no static prefix,
/// prompts of whole blocks and one output token, so trace blocks are exactly pool blocks.
fn pair_trace(id: &str, reqs: &[(f64, &[u64])]) -> String {
    let rs: Vec<String> = reqs
        .iter()
        .map(|(t, ids)| {
            format!(
                r#"{{"t":{t},"model":"claude-sonnet-4-5","in":{},"out":1,"hash_ids":{ids:?},"api_time":1.0,"think_time":0.0}}"#,
                ids.len() * 16
            )
        })
        .collect();
    format!(
        r#"{{"id":"{id}","block_size":16,"tool_tokens":0,"system_tokens":0,"requests":[{}]}}"#,
        rs.join(",")
    )
}

/// Session A sends [1,2] at 0 s and [1,2,3] at 100 s; session B [1,2] at 50 s and [1,2,4] at
/// 150 s. Ids are local: A's 1 and B's 1 are different blocks (6 distinct: A1 A2 A3 B1 B2 B4).
fn pair(dir: &Path) -> Vec<Trace> {
    std::fs::write(
        dir.join("a.json"),
        pair_trace("a", &[(0.0, &[1, 2]), (100.0, &[1, 2, 3])]),
    )
    .unwrap();
    std::fs::write(
        dir.join("b.json"),
        pair_trace("b", &[(50.0, &[1, 2]), (150.0, &[1, 2, 4])]),
    )
    .unwrap();
    trace::read_path(dir).unwrap()
}

fn run(traces: &[Trace], spec: &CacheSpec, opts: &BuildOptions) -> Vec<replay::Priced> {
    let starts = wl::starts(traces, Arrivals::Recorded, 0);
    replay::run(traces, &starts, spec, opts, &PriceTable::bundled()).unwrap()
}

fn cached(r: &[replay::Priced]) -> Vec<u64> {
    r.iter().map(|p| p.outcome.cached_tokens).collect()
}

#[test]
fn two_sessions_on_a_paged_pool_one_block_too_small_evict_what_lru_says() {
    let dir = tempfile::tempdir().unwrap();
    let traces = pair(dir.path());
    let paged = |b| CacheSpec::new("paged").unwrap().with_kv_blocks(Some(b));
    let opts = BuildOptions::default();
    // vLLM rules (src/cache/paged.rs): a hit is 16 × min(matched, ⌊(N−1)/16⌋); a request caches
    // the whole blocks of prompt + output − 1 (here the prompt: 2 or 3 blocks); a finishing
    // request frees its blocks tail first, and allocation evicts the least recently freed.
    //
    // Unbounded: t100 A reads A1 A2 (32 of 48); t150 B reads B1 B2 (32 of 48).
    let free = run(&traces, &paged(1_000_000), &opts);
    // Results come back in (session, stream, request) order: A0, A1, B0, B1.
    assert_eq!(cached(&free), vec![0, 32, 0, 32]);
    // 5 blocks: t0 A0 takes A1 A2, freed at t1 tail first (free list A2, A1); t50 B0 takes two
    // fresh slots, freed B2, B1 (list A2 A1 B2 B1, one slot free). t100 A1 pins A1 A2 and puts
    // A3 in the free slot; freed A3 A2 A1 (list B2 B1 A3 A2 A1). t150 B1 pins B1 B2 (reads 32)
    // and allocating B4 evicts the least recently freed unpinned block, A3. Same hits.
    let five = run(&traces, &paged(5), &opts);
    assert_eq!(cached(&five), vec![0, 32, 0, 32]);
    assert!(five.iter().all(|p| !p.evicted()));
    // 4 blocks, one too small: t100 A1 pins A1 A2 and allocating A3 in the full pool evicts the
    // least recently freed, B2. t150 B finds B1, then B2 is gone: it reads 16 tokens and its
    // reuse stops at an evicted block.
    let four = run(&traces, &paged(4), &opts);
    assert_eq!(cached(&four), vec![0, 32, 0, 16]);
    assert_eq!(
        four.iter().map(|p| p.evicted()).collect::<Vec<_>>(),
        vec![false, false, false, true]
    );
    let (_, all) = replay::totals(2, &four);
    // 48 of 160 prompt tokens against 64 of 160 unbounded: 10 points lost to capacity.
    assert_eq!((all.prompt_tokens, all.cached_tokens), (160, 48));
    assert_eq!(all.evicted_requests, 1);
}

/// The points of a capacity curve replay on requests built once, in parallel (`run_engines`,
/// what `workload -L kv-blocks=...` runs): each point's results are those of its own replay,
/// in the order the points were given, both engines mixed.
#[test]
fn engine_points_replayed_together_equal_each_replayed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let traces = pair(dir.path());
    let opts = BuildOptions::default();
    let starts = wl::starts(&traces, Arrivals::Recorded, 0);
    let specs: Vec<CacheSpec> = [("paged", Some(4)), ("radix", Some(4)), ("paged", Some(5))]
        .into_iter()
        .chain([("paged", None), ("paged", Some(4))])
        .map(|(n, b)| CacheSpec::new(n).unwrap().with_kv_blocks(b))
        .collect();
    let refs: Vec<&CacheSpec> = specs.iter().collect();
    let bar = indicatif::ProgressBar::hidden();
    let prices = PriceTable::bundled();
    let together = replay::run_engines(&traces, &starts, &refs, &opts, &prices, &bar).unwrap();
    assert_eq!(together.len(), specs.len());
    for (spec, got) in specs.iter().zip(&together) {
        let alone = run(&traces, spec, &opts);
        assert_eq!(cached(got), cached(&alone), "{spec:?}");
        let evicted = |r: &[replay::Priced]| r.iter().map(|p| p.evicted()).collect::<Vec<_>>();
        assert_eq!(evicted(got), evicted(&alone), "{spec:?}");
    }
    // The hand-derived figures of the test above: 4 blocks evict B2, 5 and unbounded do not.
    assert_eq!(cached(&together[0]), vec![0, 32, 0, 16]);
    assert_eq!(cached(&together[2]), vec![0, 32, 0, 32]);
    assert_eq!(cached(&together[3]), vec![0, 32, 0, 32]);
    assert_eq!(cached(&together[4]), cached(&together[0]));
    // No engine: nothing to replay.
    let none = replay::run_engines(&traces, &starts, &[], &opts, &prices, &bar).unwrap();
    assert!(none.is_empty());
    // A provider cache is not a pool: it is refused, naming it.
    let anthropic = CacheSpec::new("anthropic").unwrap();
    let err = replay::run_engines(&traces, &starts, &[&anthropic], &opts, &prices, &bar)
        .unwrap_err()
        .to_string();
    assert!(err.contains("anthropic"), "{err}");
}

/// A run with several engines replays all their pools (and unbounded twins) on requests built
/// once: each engine's row is the row of a run with that engine alone.
#[test]
fn several_engines_in_one_run_print_the_rows_of_each_run_alone() {
    let dir = tempfile::tempdir().unwrap();
    pair(dir.path());
    let run = |caches: &[&str]| {
        let mut c = bin();
        c.arg("workload").arg(dir.path()).args(["--kv-blocks", "4"]);
        for name in caches {
            c.args(["--cache", name]);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let row = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{text}"))
            .to_string()
    };
    let both = run(&["paged", "anthropic", "radix"]);
    for name in ["paged", "radix"] {
        assert_eq!(row(&both, name), row(&run(&[name]), name));
    }
    // The hand-derived figures above: 4 blocks read 48 of 160 tokens, 10 points under unbounded.
    let paged = row(&both, "paged");
    assert!(
        paged.contains(" 160 ") && paged.contains("30.0%"),
        "{paged}"
    );
    assert!(paged.trim_end().ends_with("10.0"), "{paged}");
}

#[test]
fn capacity_curve_marks_the_knee_derived_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    pair(dir.path());
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["workload"])
        .arg(dir.path())
        .args(["--cache", "paged", "--sweep", "kv-blocks=4,5,6,8", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // From the test above: 4 blocks read 48 of 160 tokens (30%), 5 or more read 64 (40%, the
    // unbounded figure; 6 distinct blocks never need more than 6 slots). The knee, the
    // smallest pool within one point of unbounded, is 5 blocks = 80 tokens.
    assert!(stdout.contains("knee: 5 blocks (80 tokens)"), "{stdout}");
    let csv = std::fs::read_to_string(out.path().join("workload_sweep.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let hits: Vec<(&str, &str)> = rows.iter().map(|r| (r[1], r[10])).collect();
    assert_eq!(
        hits,
        vec![
            ("4", "0.300000"),
            ("5", "0.400000"),
            ("6", "0.400000"),
            ("8", "0.400000"),
            ("unbounded", "0.400000")
        ]
    );
    let svg = std::fs::read_to_string(out.path().join("workload-capacity-paged.svg")).unwrap();
    assert!(svg.contains("knee: 5"), "the chart marks the knee");
}

/// Tokens a request shares with an earlier one of its stream as the workload builds prompts:
/// the shared leading blocks, plus the previous prompt's tail when this request continues it
/// (shares all its blocks and has more; the tail is the start of the next block).
fn direct(t: &Trace, s: &trace::TraceStream) -> Vec<u64> {
    let hits = prefix::consecutive_hits(s, t.block_size);
    let bs = t.block_size;
    hits.iter()
        .enumerate()
        .map(|(k, &h)| {
            let Some(p) = k.checked_sub(1).map(|j| &s.requests[j]) else {
                return h;
            };
            let r = &s.requests[k];
            let n = p.hash_ids.len();
            let cont = r.hash_ids.len() > n && r.hash_ids[..n] == p.hash_ids[..];
            let tail = p.input_tokens - n as u64 * bs;
            h + if cont && tail < bs { tail } else { 0 }
        })
        .collect()
}

/// Whether some request of the session before `k` of stream `si` shares more leading hash
/// blocks with it than the stream's previous request.
fn older_match_is_longer(t: &Trace, si: usize, k: usize) -> bool {
    let ids = &t.streams[si].requests[k].hash_ids;
    let lead = |o: &[u64]| o.iter().zip(ids).take_while(|(a, b)| a == b).count();
    let prev = k
        .checked_sub(1)
        .map_or(0, |j| lead(&t.streams[si].requests[j].hash_ids));
    let at = t.streams[si].requests[k].sent_at_ms;
    t.streams.iter().enumerate().any(|(sj, s)| {
        s.requests
            .iter()
            .enumerate()
            .filter(|(j, r)| r.sent_at_ms <= at && !(sj == si && *j >= k))
            .any(|(_, r)| lead(&r.hash_ids) > prev)
    })
}

#[test]
fn ideal_workload_equals_the_direct_count_of_shared_leading_blocks() {
    // The 8 smallest-numbered traces (one with a subagent) keep this debug-build test fast.
    let traces: Vec<Trace> = [
        "0001", "0009", "0017", "0033", "0041", "0049", "0057", "0065",
    ]
    .iter()
    .map(|n| trace::read(&fixtures().join(format!("trace_{n}.json"))).unwrap())
    .collect();
    // One model for every request: caches are per model, the direct count is not.
    let opts = BuildOptions {
        model: Some("claude-sonnet-4-5".into()),
        ..BuildOptions::default()
    };
    let res = run(&traces, &CacheSpec::new("ideal").unwrap(), &opts);
    let (mut exact, mut older, mut direct_sum) = (0, 0, 0u64);
    for p in &res {
        let t = &traces[p.at.session];
        let s = &t.streams[p.at.stream];
        let want = direct(t, s)[p.at.request];
        direct_sum += want;
        assert_eq!(
            p.outcome.prompt_tokens,
            s.requests[p.at.request].input_tokens
        );
        if older_match_is_longer(t, p.at.stream, p.at.request) {
            // A request returning to an older prefix (after a compaction) reads more.
            assert!(p.outcome.cached_tokens >= want);
            older += 1;
        } else {
            assert_eq!(p.outcome.cached_tokens, want, "{} {:?}", t.id, p.at);
            exact += 1;
        }
    }
    let (_, all) = replay::totals(traces.len(), &res);
    let direct_rate = direct_sum as f64 / all.prompt_tokens as f64;
    eprintln!(
        "exact {exact}, older {older}, ideal {:.4} direct {direct_rate:.4}",
        all.hit_rate()
    );
    assert!(exact > 10 * older, "{exact} exact, {older} older");
    assert!((all.hit_rate() - direct_rate).abs() < 0.001);
}

#[test]
fn import_trace_round_trips_through_run() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("t17.toml");
    let o = bin()
        .args(["import", "trace"])
        .arg(fixtures().join("trace_0017.json"))
        .arg("--out")
        .arg(&toml)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The subagent goes beside --out.
    let agent = dir.path().join("t17.agent_001.toml");
    assert!(agent.exists());
    let out = dir.path().join("run");
    let o = bin()
        .arg("run")
        .arg(&toml)
        .arg(&agent)
        .args(["--cache", "ideal", "--strategy", "permission-mode", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("requests.csv")).unwrap();
    let t = trace::read(&fixtures().join("trace_0017.json")).unwrap();
    for (si, stream) in t.streams.iter().enumerate() {
        let name = if si == 0 {
            "trace_0017".to_string()
        } else {
            format!("trace_0017.{}", stream.name)
        };
        let rows: Vec<Vec<&str>> = csv
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|r| r[0] == name)
            .collect();
        assert_eq!(rows.len(), stream.requests.len(), "{name}");
        let hits = prefix::consecutive_hits(stream, t.block_size);
        let longest_reply = stream
            .requests
            .iter()
            .map(|r| r.output_tokens)
            .max()
            .unwrap();
        let (mut read, mut shared) = (0u64, 0u64);
        for (k, (row, r)) in rows.iter().zip(&stream.requests).enumerate() {
            // Every replayed prompt has the recorded size...
            assert_eq!(row[7].parse::<u64>().unwrap(), r.input_tokens, "{name} {k}");
            let c: u64 = row[8].parse().unwrap();
            (read, shared) = (read + c, shared + hits[k]);
            if k == 0 {
                continue;
            }
            let p = &stream.requests[k - 1];
            // ...never reads more than the previous prompt plus its reply...
            assert!(c <= p.input_tokens + p.output_tokens, "{name} {k}");
            let continues = r.hash_ids.len() >= p.hash_ids.len()
                && r.hash_ids[..p.hash_ids.len()] == p.hash_ids[..];
            if continues {
                // ...reads at least the shared leading blocks when it continues the previous
                // prompt (more by the tokens past the last full block, read token by token)...
                assert!(c >= hits[k], "{name} request {k}: {c} < {}", hits[k]);
            } else {
                // ...and after a rewrite keeps whole messages: at most one reply short.
                assert!(c + longest_reply >= hits[k], "{name} request {k}");
            }
        }
        // Over the stream, within 0.5% of the block count (above it by the tails).
        let gap = (read as f64 - shared as f64).abs() / shared.max(1) as f64;
        assert!(gap < 0.005, "{name}: read {read}, shared blocks {shared}");
    }
}

/// `--keepalive INTERVAL` pings a stream through its idle gaps: one session of 80 blocks
/// (1,280 tokens) at 0 s and 81 blocks at 700 s under a 5-minute TTL. Without pings (or with
/// `off`, or pings 6 min apart) the entry has expired and both prompts are recomputed (2,576
/// tokens); pings every 4m30s keep the first prompt cached, so only the second's 1,296 are.
/// A bad interval is exit 2 with the fix.
#[test]
fn keepalive_pings_keep_an_entry_alive_through_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second): (Vec<u64>, Vec<u64>) = ((1..=80).collect(), (1..=81).collect());
    std::fs::write(
        dir.path().join("a.json"),
        pair_trace("a", &[(0.0, &first), (700.0, &second)]),
    )
    .unwrap();
    let recomputed = |extra: &[&str]| -> u64 {
        let o = bin()
            .args(["workload", "--cache", "anthropic", "--ttl", "5m"])
            .args(extra)
            .arg(dir.path())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let row = out
            .lines()
            .find(|l| l.starts_with("anthropic"))
            .expect("totals row");
        row.split_whitespace().nth(3).unwrap().parse().unwrap()
    };
    assert_eq!(recomputed(&[]), 2576);
    assert_eq!(recomputed(&["--keepalive", "off"]), 2576);
    assert_eq!(recomputed(&["--keepalive", "6m"]), 2576);
    assert_eq!(recomputed(&["--keepalive", "4m30s"]), 1296);
    let o = bin()
        .args(["workload", "--keepalive", "4x"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("expected `off` or a duration"), "{err}");
}

#[test]
fn bad_trace_input_exits_2_naming_file_request_and_hint() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"id":"x","block_size":64,"requests":[{"t":0,"in":10,"out":1,"hash_ids":[]},{"t":1,"in":"many"}]}"#,
    )
    .unwrap();
    for args in [vec!["import", "trace"], vec!["workload"]] {
        let o = bin().args(&args).arg(&bad).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("bad.json") && err.contains("request 1") && err.contains("hint"),
            "{err}"
        );
    }
    // A directory to import needs --out; an unknown --kind is refused; both exit 2.
    let o = bin()
        .args(["import", "trace"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = bin()
        .args(["import", "trace", "--kind", "csv"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // `--kind` takes one value list in every command (tests/cli_vocabulary.rs): clap refuses
    // `csv` and lists the kinds, the two trace kinds among them.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("kv-cache-tester") && err.contains("mooncake"),
        "{err}"
    );
    // Nothing was written next to the bad input.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn the_readme_workload_example_prints_what_the_readme_shows() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("## Real workloads: block-hash traces").unwrap();
    let block = readme[start..].split("```text\n").nth(1).unwrap();
    let block = block.split("```").next().unwrap();
    let (cmd, table) = block.split_once('\n').unwrap();
    let args: Vec<&str> = cmd.trim_start_matches("$ plancache ").split(' ').collect();
    let o = bin()
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        table,
        "README's workload table is stale"
    );
}
