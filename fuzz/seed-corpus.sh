#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with the bundled files each loader reads (the seed corpus), and
# small seeds of every reader's format made from them (long strings cut, a few requests).
# With MAX_BYTES (e.g. `fuzz/seed-corpus.sh 65536`), seeds larger than that are left out, so
# each execution stays cheap under `-max_len`.
set -euo pipefail
cd "$(dirname "$0")"
max_bytes=${1:-}
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
# Small seeds for the readers whose bundled inputs are large (cassettes up to 250 KB, traces
# up to 4 MB): every format the detector knows, a few requests each, strings cut short.
python3 - "$root" <<'PY'
import json, sys, glob, os
root = sys.argv[1]

def cut(v, n=160):
    if isinstance(v, str):
        return v[:n]
    if isinstance(v, list):
        return [cut(x, n) for x in v[:6]]
    if isinstance(v, dict):
        return {k: cut(x, n) for k, x in v.items()}
    return v

def write(path, text):
    with open(path, "w") as f:
        f.write(text)

# claude-trace JSONL: the worked example's exchanges, strings cut.
lines = open(f"{root}/tests/fixtures/raw-requests/worked-example.jsonl").read().splitlines()
write("corpus/requests/small-claude-trace.jsonl",
      "\n".join(json.dumps(cut(json.loads(l))) for l in lines if l.strip()) + "\n")
# HAR 1.2 and OpenTelemetry (spans and Claude Code log records), two requests each.
def body(user, system="You are terse. "):
    return {"model": "claude-sonnet-4-5", "max_tokens": 100,
            "system": [{"type": "text", "text": system * 20, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": user}]}
usage = {"input_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 160,
         "output_tokens": 9}
def har_entry(at, user):
    return {"startedDateTime": at, "time": 900.0,
            "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                        "headers": [], "postData": {"mimeType": "application/json",
                                                    "text": json.dumps(body(user))}},
            "response": {"status": 200, "headers": [],
                         "content": {"mimeType": "application/json",
                                     "text": json.dumps({"type": "message", "usage": usage})}}}
write("corpus/requests/small.har", json.dumps({"log": {"version": "1.2", "entries": [
    har_entry("2026-12-01T10:00:00.000Z", "hi"),
    har_entry("2026-12-01T11:06:00.000+01:00", "again")]}}))
def rec(ms, event, attrs):
    return {"timeUnixNano": str(ms * 1000000), "body": {"stringValue": event},
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs]}
t0 = 1764583200000
write("corpus/requests/small-otel-logs.json", json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [
    rec(t0, "claude_code.api_request_body", [("body", json.dumps(body("hi")))]),
    rec(t0 + 900, "claude_code.api_response_body", [("body", json.dumps({"type": "message", "usage": usage}))]),
    rec(t0 + 60000, "claude_code.api_request_body", [("body", json.dumps(body("hi", "You are terse! ")))]),
    rec(t0 + 60950, "claude_code.api_request", [("model", "claude-sonnet-4-5"), ("input_tokens", "5"),
        ("cache_read_tokens", "0"), ("cache_creation_tokens", "160"), ("output_tokens", "9")])]}]}]}))
def attr(k, v):
    return {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
write("corpus/requests/small-otel-spans.json", json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
    {"name": "chat", "startTimeUnixNano": str((t0 + i * 60000) * 1000000),
     "endTimeUnixNano": str((t0 + i * 60000 + 900) * 1000000),
     "attributes": [attr("gen_ai.request.model", "claude-sonnet-4-5"),
                    attr("gen_ai.usage.input_tokens", 1000), attr("gen_ai.usage.output_tokens", 9),
                    attr("gen_ai.usage.cache_read_input_tokens", 800 * i),
                    attr("gen_ai.usage.cache_creation_input_tokens", 190)]}
    for i in range(2)]}]}]}))
# kv-cache-tester traces: the first requests of each stream; Mooncake JSONL from the same.
traces = sorted(glob.glob(f"{root}/tests/fixtures/traces/kv-cache-tester/traces/*.json"))
for p in traces[::8]:
    t = json.load(open(p))
    def few(reqs):
        out = []
        for r in reqs[:4]:
            r = dict(r)
            r["hash_ids"] = r.get("hash_ids", [])[:24]
            r["in"] = min(r.get("in", 0), len(r["hash_ids"]) * t.get("block_size", 64) + 20)
            if "subagent" in r:
                subs = r["subagent"] if isinstance(r["subagent"], list) else [r["subagent"]]
                subs = [dict(s, requests=few(s.get("requests", []))) for s in subs[:2]]
                r["subagent"] = subs if isinstance(r["subagent"], list) else subs[0]
            out.append(r)
        return out
    t["requests"] = few(t["requests"])
    t.pop("totals", None)
    name = os.path.basename(p)[:-5]
    write(f"corpus/trace/small-{name}.json", json.dumps(t))
    mc = [{"timestamp": int(r.get("t", 0) * 1000), "input_length": r.get("in", 0),
           "output_length": r.get("out", 0), "hash_ids": r["hash_ids"]} for r in t["requests"]]
    write(f"corpus/trace/small-{name}.jsonl", "".join(json.dumps(x) + "\n" for x in mc))
PY
for y in "$root"/tests/fixtures/raw-requests/pydantic-ai/*/*.yaml; do
  [ "$(wc -c < "$y")" -lt 24576 ] && cp "$y" "corpus/requests/small-$(basename "$y")"
done
if [ -n "$max_bytes" ]; then
  find corpus -type f -size +"${max_bytes}"c -delete
fi
ls corpus
