//! `results/` is reproducible: a fresh run of `scripts/regen-results.sh` gives the committed CSVs
//! byte for byte (and the same reports).

use std::process::Command;

#[test]
fn committed_results_match_a_fresh_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg("scripts/regen-results.sh")
        .arg(tmp.path())
        .env("PLANCACHE", env!("CARGO_BIN_EXE_plancache"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = [
        "report/requests.csv",
        "report/summary.csv",
        "all-caches/requests.csv",
        "all-caches/summary.csv",
        "sweep/sweep.csv",
        "report/report.md",
    ];
    for f in files {
        let fresh = std::fs::read_to_string(tmp.path().join(f)).unwrap();
        let committed = std::fs::read_to_string(std::path::Path::new("results").join(f))
            .unwrap_or_else(|e| panic!("results/{f}: {e}; run scripts/regen-results.sh"));
        assert!(
            fresh == committed,
            "results/{f} differs from a fresh run; if the change is intended, run scripts/regen-results.sh and commit results/"
        );
    }
}
