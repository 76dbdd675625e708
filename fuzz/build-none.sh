#!/usr/bin/env bash
# Builds every fuzz target with coverage instrumentation and no sanitizer, with debug
# assertions (overflow checks) on: the flags `cargo fuzz build -O -a --sanitizer none`
# passes (cargo-fuzz 0.13), without needing cargo-fuzz installed. The code under test is safe
# Rust, so a sanitizer finds nothing a panic would not; what the runs look for is a panic, a
# hang (-timeout) or a runaway allocation (-rss_limit_mb), and without AddressSanitizer each
# execution is several times cheaper.
set -euo pipefail
cd "$(dirname "$0")"
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Ccodegen-units=1"
exec nice -n 19 cargo +nightly build --release --target x86_64-unknown-linux-gnu --bins "$@"
