//! Mooncake trace export: hash ids are shared exactly where prompts share whole blocks.

use std::path::Path;
use std::process::Command;

use plancache::cache::{self, PriceTable};
use plancache::engine::ReplayEnv;
use plancache::mooncake::{prompts, trace, BlockHasher};
use plancache::scenario::Session;
use plancache::strategy::parse_list;

fn scenario() -> Session {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/auth-plan.toml");
    Session::load(&p, None).expect("bundled scenario loads")
}

/// True when `a` and `b` agree on every token up to the end of block `k` and that block has the
/// same length in both (a partial tail only matches the same partial tail).
fn same_block_prefix(a: &[u32], b: &[u32], k: usize, size: usize) -> bool {
    let end_a = ((k + 1) * size).min(a.len());
    let end_b = ((k + 1) * size).min(b.len());
    end_a == end_b && a[..end_a] == b[..end_b]
}

#[test]
fn hash_ids_round_trip_to_shared_prefixes() {
    let session = scenario();
    for name in ["permission-mode", "toolset-swap"] {
        let s = parse_list(name).expect("strategy").remove(0);
        let env = ReplayEnv::default();
        let mut c = cache::build("ideal", &PriceTable::bundled()).expect("ideal");
        let ps = prompts(&session, s.as_ref(), c.as_mut(), &env).expect("replays");
        // A small block size gives many blocks on this short scenario.
        let size = 64;
        let mut h = BlockHasher::new(size);
        let ids: Vec<Vec<u64>> = ps.iter().map(|p| h.hash_ids(&p.1)).collect();
        for (i, a) in ps.iter().enumerate() {
            assert_eq!(ids[i].len(), a.1.len().div_ceil(size));
            for (j, b) in ps.iter().enumerate() {
                for (k, (x, y)) in ids[i].iter().zip(&ids[j]).enumerate() {
                    assert_eq!(
                        x == y,
                        same_block_prefix(&a.1, &b.1, k, size),
                        "{name}: requests {i} and {j}, block {k}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_constant_prefix_is_stored_once_and_a_swap_stores_more() {
    let session = scenario();
    let run = |name: &str| {
        let s = parse_list(name).expect("strategy").remove(0);
        let mut c = cache::build("ideal", &PriceTable::bundled()).expect("ideal");
        trace(&session, s.as_ref(), c.as_mut(), &ReplayEnv::default(), 512).expect("trace")
    };
    let distinct = |lines: &[plancache::mooncake::TraceLine]| {
        let mut all: Vec<u64> = lines.iter().flat_map(|l| l.hash_ids.clone()).collect();
        all.sort();
        all.dedup();
        all.len()
    };
    let pm = run("permission-mode");
    let swap = run("toolset-swap");
    // permission-mode keeps tools and system byte-identical: one first block for every request.
    let mut firsts: Vec<u64> = pm.iter().map(|l| l.hash_ids[0]).collect();
    firsts.dedup();
    assert_eq!(firsts, vec![0]);
    // toolset-swap changes the tool list on entering and leaving plan mode, so blocks after the
    // change are new nodes of the prefix tree: more distinct blocks for the same session.
    assert!(
        distinct(&swap) > distinct(&pm),
        "{} vs {}",
        distinct(&swap),
        distinct(&pm)
    );
    // Timestamps are relative to the first request and never decrease.
    assert_eq!(pm[0].timestamp, 0);
    assert!(pm.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
    assert!(pm
        .iter()
        .all(|l| l.hash_ids.len() as u64 == l.input_length.div_ceil(512)));
}

#[test]
fn the_cli_writes_one_json_line_per_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("trace.jsonl");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .current_dir(root)
        .args([
            "export",
            "mooncake",
            "scenarios/auth-plan.toml",
            "--strategy",
            "permission-mode",
            "--out",
        ])
        .arg(&out)
        .status()
        .expect("runs");
    assert!(status.success());
    let text = std::fs::read_to_string(&out).expect("written");
    let session = scenario();
    let assistant_steps = session
        .scenario
        .steps
        .iter()
        .filter(|s| matches!(s, plancache::scenario::Step::Assistant(_)))
        .count();
    assert_eq!(text.lines().count(), assistant_steps);
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("json");
        for k in ["timestamp", "input_length", "output_length", "hash_ids"] {
            assert!(v.get(k).is_some(), "{k} in {l}");
        }
    }
    // Bad input: a zero block size is a usage error (exit 2).
    let bad = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .current_dir(root)
        .args([
            "export",
            "mooncake",
            "scenarios/auth-plan.toml",
            "--strategy",
            "permission-mode",
            "--block-size",
            "0",
        ])
        .status()
        .expect("runs");
    assert_eq!(bad.code(), Some(2));
}
