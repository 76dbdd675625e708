#!/usr/bin/env python3
"""Times Python's tiktoken, tiktoken-rs, plancache's own scanner (the default tokenizer) and, in a
`--features fast-bpe` build, bpe-openai side by side on the benchmark corpus.

Usage (from the repository root):
    pip install tiktoken
    python3 benches/compare_tiktoken.py [MB_EACH] [--features FEATURES] [--no-default-features]

The cargo flags go to the Rust side's build: `--features fast-bpe` adds the bpe-openai column.
Every rate is bytes per second of the measuring thread's CPU time, best of five runs
(`time.thread_time()` here, CLOCK_THREAD_CPUTIME_ID in the Rust example): the machine is shared,
and CPU time does not count the time other processes hold the core. The ratios are against
Python's rate measured in the same run.

Runs offline: Python's tiktoken would download its rank files on first use, so this script points
TIKTOKEN_CACHE_DIR at a folder holding the rank files that tiktoken-rs ships in its crate (found
through `cargo metadata`), each named after the sha1 of its download URL, as tiktoken expects.
The Rust side is `examples/write_corpus.rs`, which writes the same corpus, times the Rust
libraries and checks their ids against tiktoken-rs's; token counts must agree with Python's.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
ENCODINGS = ["o200k_base", "cl100k_base"]


def rank_files_dir():
    meta = json.loads(
        subprocess.check_output(["cargo", "metadata", "--format-version", "1"], text=True)
    )
    for pkg in meta["packages"]:
        if pkg["name"] == "tiktoken-rs":
            return os.path.join(os.path.dirname(pkg["manifest_path"]), "assets")
    sys.exit("tiktoken-rs not found in cargo metadata; run `cargo fetch` first")


def main():
    args = sys.argv[1:]
    cargo_flags = []
    while "--features" in args:
        i = args.index("--features")
        cargo_flags += args[i : i + 2]
        del args[i : i + 2]
    if "--no-default-features" in args:
        args.remove("--no-default-features")
        cargo_flags.append("--no-default-features")
    mb = args[0] if args else "1"
    work = tempfile.mkdtemp(prefix="plancache-tok-")
    cache = os.path.join(work, "tiktoken-cache")
    os.makedirs(cache)
    assets = rank_files_dir()
    for enc in ENCODINGS:
        key = hashlib.sha1(URL.format(enc).encode()).hexdigest()
        shutil.copy(os.path.join(assets, enc + ".tiktoken"), os.path.join(cache, key))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken  # imported after TIKTOKEN_CACHE_DIR is set

    corpus = os.path.join(work, "corpus")
    rust = subprocess.check_output(
        ["cargo", "run", "--quiet", "--release", *cargo_flags, "--example", "write_corpus", "--",
         corpus, mb],
        text=True,
    )
    rust_rates = {}
    libraries = []
    for line in rust.splitlines():
        # rust <library> <enc> <part>: <n> tokens, <rate> MB/s
        words = line.replace(":", "").replace(",", "").split()
        rust_rates[(words[1], words[2], words[3])] = (int(words[4]), float(words[6]))
        if words[1] not in libraries:
            libraries.append(words[1])
    print(f"python tiktoken {tiktoken.__version__}; MB per second of thread CPU time, best of five")
    header = f"{'encoding':<12} {'part':<6} {'tokens':>9} {'python':>8}"
    for lib in libraries:
        header += f" {lib:>12} {'/py':>6}"
    print(header)
    for enc_name in ENCODINGS:
        enc = tiktoken.get_encoding(enc_name)
        for part in ["prose", "code", "json"]:
            with open(os.path.join(corpus, part + ".txt"), encoding="utf-8") as f:
                text = f.read()
            best = float("inf")
            for _ in range(5):
                t = time.thread_time()
                n = len(enc.encode_ordinary(text))
                best = min(best, time.thread_time() - t)
            py_rate = len(text.encode()) / best / 1e6
            row = f"{enc_name:<12} {part:<6} {n:>9} {py_rate:>8.1f}"
            for lib in libraries:
                lib_n, rate = rust_rates[(lib, enc_name, part)]
                if lib_n != n:
                    sys.exit(f"token counts differ for {enc_name} {part}: python {n}, {lib} {lib_n}")
                row += f" {rate:>12.1f} {rate / py_rate:>5.2f}x"
            print(row)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
