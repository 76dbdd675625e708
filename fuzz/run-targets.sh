#!/usr/bin/env bash
# Runs fuzz targets one after another at nice 19, each until it has made RUNS executions or
# SECONDS seconds have passed, and prints one line per run: target, executions, peak RSS, exit
# status (0: nothing found). Logs go to fuzz/logs/TARGET-N.log, findings to fuzz/artifacts/TARGET/.
#
#   fuzz/build-none.sh                       # once: the targets without a sanitizer
#   fuzz/seed-corpus.sh 65536                # once: seeds up to 64 KB
#   fuzz/run-targets.sh RUNS SECONDS TARGET:MAX_LEN...
#
# e.g. fuzz/run-targets.sh 1000000 3600 trace:24576 requests:24576
set -uo pipefail
cd "$(dirname "$0")"
runs=$1 secs=$2
shift 2
bin=target/x86_64-unknown-linux-gnu/release
mkdir -p logs
for spec in "$@"; do
  t=${spec%%:*} len=${spec#*:}
  mkdir -p "artifacts/$t" "corpus/$t"
  n=1
  while [ -e "logs/$t-$n.log" ]; do n=$((n + 1)); done
  log=logs/$t-$n.log
  TMPDIR=${TMPDIR:-/dev/shm} nice -n 19 "$bin/$t" "corpus/$t" -runs="$runs" -max_total_time="$secs" -max_len="$len" \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="artifacts/$t/" -print_final_stats=1 \
    > "$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$')
  echo "$t run $n: ${execs:-?} executions, peak RSS ${rss:-?} MB, max_len $len, exit $rc ($log)"
done
