#!/usr/bin/env bash
# Regenerates results/: the reference outputs of the bundled scenarios and the bundled sweep.
#
#   scripts/regen-results.sh              # builds plancache with cargo, then rewrites results/
#   scripts/regen-results.sh OUT_DIR      # writes elsewhere (tests/results.rs does this)
#   PLANCACHE=path/to/plancache scripts/regen-results.sh
#
# tests/results.rs runs this script into a temporary directory and checks that the committed CSVs
# match byte for byte; run it after any change that moves the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results}"
if [ -z "${PLANCACHE:-}" ]; then
  cargo build --quiet --bin plancache
  PLANCACHE=target/debug/plancache
fi
rm -rf "$out/report" "$out/all-caches" "$out/sweep"
# Design-review report: every strategy, default cache model (anthropic).
"$PLANCACHE" report scenarios --out "$out/report"
# Every strategy against every cache model (numbers only).
"$PLANCACHE" run scenarios --cache all --out "$out/all-caches" > /dev/null
# The bundled sweep: where history-reset beats permission-mode.
"$PLANCACHE" sweep sweeps/history-reset-vs-permission-mode.toml --out "$out/sweep"
