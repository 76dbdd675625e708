#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with the bundled files each loader reads (the seed corpus).
set -euo pipefail
cd "$(dirname "$0")"
root=..
mk() { mkdir -p "corpus/$1"; }
mk scenario; cp "$root"/scenarios/*.toml "$root"/tests/fixtures/*.toml corpus/scenario/
# Transcripts are cut into windows of 24 records (at most 16 KB each): small inputs mutate fast,
# and a window still holds whole requests with their usage.
windows() {
  local f=$1 dir=$2 n
  n=$(wc -l < "$f")
  for start in $(seq 1 24 "$n"); do
    sed -n "${start},$((start + 23))p" "$f" > "$dir/.window"
    head -c 16384 "$dir/.window" > "$dir/$(basename "$f" .jsonl)-$start.jsonl"
    rm "$dir/.window"
  done
}
mk import_claude_code
for f in "$root"/tests/fixtures/transcripts/*.jsonl; do
  case "$f" in *codex*) ;; *) windows "$f" corpus/import_claude_code ;; esac
done
mk import_codex
for f in "$root"/tests/fixtures/transcripts/codex*.jsonl; do windows "$f" corpus/import_codex; done
mk config_pricing
cp "$root"/data/pricing.toml corpus/config_pricing/pricing-only.toml
sed -i '1i ---' corpus/config_pricing/pricing-only.toml
# The documented example of docs/cache-models.md, alone and with the bundled prices.
sed -n '/^## `--cache-config FILE`/,/^## /p' "$root"/docs/cache-models.md \
  | sed -n '/^```toml/,/^```/p' | sed '1d;$d' > corpus/config_pricing/config-only.toml
{ cat corpus/config_pricing/config-only.toml; printf '\n---\n'; cat "$root"/data/pricing.toml; } \
  > corpus/config_pricing/config-and-pricing.toml
mk baseline
for d in "$root"/results/*/; do
  [ -f "$d/summary.csv" ] && cp "$d/summary.csv" "corpus/baseline/$(basename "$d")-summary.csv"
done
[ -f "$root/results/summary.csv" ] && cp "$root/results/summary.csv" corpus/baseline/summary.csv
mk sweep; cp "$root"/sweeps/*.toml corpus/sweep/
for d in "$root"/results/*/; do
  [ -f "$d/sweep.csv" ] && { cat "$root"/sweeps/*.toml | head -c 4000; printf '\n---\n'; head -c 4000 "$d/sweep.csv"; } > "corpus/sweep/with-csv-$(basename "$d").txt"
done
mk requests
cp "$root"/tests/fixtures/raw-requests/pydantic-ai/*/*.yaml "$root"/tests/fixtures/raw-requests/*.jsonl corpus/requests/
mk trace
for f in "$root"/tests/fixtures/traces/kv-cache-tester/traces/*.json; do
  [ "$(wc -c < "$f")" -lt 65536 ] && cp "$f" corpus/trace/
done
mk params
printf 'model=claude-opus-4-6\ntiming.human=4m\n' > corpus/params/no-scenario.txt
for f in "$root"/scenarios/*.toml; do
  { printf 'system[1].tokens=9000\nsteps[2].user.tokens=300\n---\n'; cat "$f"; } > "corpus/params/$(basename "$f" .toml).txt"
done
ls corpus
