//! docs/scale-out.md's recipes, run locally with the environment the CI systems set: a
//! `workload -L` grid split over a GitHub Actions matrix (`--shard I/N`) and over a Kubernetes
//! indexed Job (`--shard-env JOB_COMPLETION_INDEX/N`, the 0-based index in the environment),
//! merged by `plancache merge`, gives the bytes of the unsharded run's `workload_sweep.csv`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plancache"));
    c.env("NO_COLOR", "1");
    c
}

/// Three small bundled traces (the smallest by size), copied so the run stays quick.
fn traces(dir: &Path) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/kv-cache-tester/traces");
    let to = dir.join("traces");
    std::fs::create_dir_all(&to).unwrap();
    for name in ["trace_0057.json", "trace_0297.json", "trace_0265.json"] {
        std::fs::copy(src.join(name), to.join(name)).unwrap();
    }
    to
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "exit {:?}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The grid of the recipe: a `paged` capacity curve (3 sizes + unbounded = 4 points) and an
/// `anthropic` TTL × keep-alive grid (2 × 2 = 4 points): 8 points.
fn workload(traces: &Path, out: &Path) -> Command {
    let mut c = bin();
    c.arg("workload")
        .arg(traces)
        .args(["--cache", "paged,anthropic"])
        .args(["-L", "kv-blocks=256,4k,64k"])
        .args(["-L", "ttl=5m,1h", "-L", "keepalive=off,4m30s"])
        .arg("--out")
        .arg(out);
    c
}

fn merged(shards: &Path, out: &Path) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(shards)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    ok(bin()
        .arg("merge")
        .args(&files)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap());
    std::fs::read_to_string(out.join("workload_sweep.csv")).unwrap()
}

#[test]
fn sharded_workload_merges_to_the_unsharded_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = traces(tmp.path());
    let whole = tmp.path().join("whole");
    ok(workload(&traces, &whole).output().unwrap());
    let expected = std::fs::read_to_string(whole.join("workload_sweep.csv")).unwrap();
    // 8 points + the header.
    assert_eq!(expected.lines().count(), 9, "{expected}");

    // GitHub Actions: `matrix: shard: [1, 2, 3]`, each job `--shard ${{ matrix.shard }}/3`.
    let gha = tmp.path().join("gha");
    for i in 1..=3 {
        ok(workload(&traces, &gha)
            .args(["--shard", &format!("{i}/3")])
            .output()
            .unwrap());
    }
    // Shard 1 of 3 holds points 1, 4, 7 (interleaved, as `sweep --shard`).
    let s1 = std::fs::read_to_string(gha.join("shard-1-of-3.csv")).unwrap();
    let points: Vec<&str> = s1.lines().skip(1).map(|l| &l[..1]).collect();
    assert_eq!(points, ["1", "4", "7"]);
    assert_eq!(merged(&gha, &tmp.path().join("gha-merged")), expected);

    // Kubernetes indexed Job, completions: 3: each pod has JOB_COMPLETION_INDEX = 0, 1, 2.
    let k8s = tmp.path().join("k8s");
    for i in 0..3 {
        ok(workload(&traces, &k8s)
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .args(["--shard-env", "JOB_COMPLETION_INDEX/3"])
            .output()
            .unwrap());
    }
    assert_eq!(merged(&k8s, &tmp.path().join("k8s-merged")), expected);
}

#[test]
fn a_missing_shard_or_index_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = traces(tmp.path());
    let shards = tmp.path().join("shards");
    ok(workload(&traces, &shards)
        .args(["--shard", "1/2"])
        .output()
        .unwrap());
    let o = bin()
        .arg("merge")
        .arg(shards.join("shard-1-of-2.csv"))
        .arg("--out")
        .arg(tmp.path().join("m"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("shard-2-of-2.csv"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The index is 0-based: 3 is not a shard of 3.
    let o = workload(&traces, &shards)
        .env("JOB_COMPLETION_INDEX", "3")
        .args(["--shard-env", "JOB_COMPLETION_INDEX/3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("JOB_COMPLETION_INDEX=3") && err.contains("0 to 2"),
        "{err}"
    );
    let o = workload(&traces, &shards)
        .env_remove("JOB_COMPLETION_INDEX")
        .args(["--shard-env", "JOB_COMPLETION_INDEX/3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not set"));
}
