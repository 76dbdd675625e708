#!/usr/bin/env python3
"""Times Python's tiktoken, tiktoken-rs and plancache's default tokenizer side by side on the
benchmark corpus.

Usage (from the repository root):
    pip install tiktoken
    python3 benches/compare_tiktoken.py [MB_EACH] [--features FEATURES] [--no-default-features]

The cargo flags pick plancache's backend for the Rust side (`--no-default-features --features
tiktoken` for tiktoken-rs, `--features fast-bpe` for bpe-openai); the "plancache" column names
the backend that ran.

Runs offline: Python's tiktoken would download its rank files on first use, so this script points
TIKTOKEN_CACHE_DIR at a folder holding the rank files that tiktoken-rs ships in its crate (found
through `cargo metadata`), each named after the sha1 of its download URL, as tiktoken expects.
The Rust side is `examples/write_corpus.rs`, which writes the same corpus and times tiktoken-rs.
Both sides report the best of three runs; token counts must agree (identical ids).
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
    backend = "?"
    for line in rust.splitlines():
        # rust <library> <enc> <part>: <n> tokens, <rate> MB/s [(backend)]
        words = line.replace(":", "").replace(",", "").split()
        rust_rates[(words[1], words[2], words[3])] = (int(words[4]), float(words[6]))
        if words[1] == "plancache" and len(words) > 8:
            backend = words[8].strip("()")
    print(f"plancache backend: {backend}; python tiktoken {tiktoken.__version__}")
    print(
        f"{'encoding':<12} {'part':<6} {'tokens':>9} {'python MB/s':>12} {'tiktoken-rs':>12}"
        f" {'plancache':>10} {'tiktoken-rs/py':>15} {'plancache/py':>13}"
    )
    for enc_name in ENCODINGS:
        enc = tiktoken.get_encoding(enc_name)
        for part in ["prose", "code", "json"]:
            with open(os.path.join(corpus, part + ".txt"), encoding="utf-8") as f:
                text = f.read()
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                n = len(enc.encode_ordinary(text))
                best = min(best, time.perf_counter() - t)
            py_rate = len(text.encode()) / best / 1e6
            tik_n, tik_rate = rust_rates[("tiktoken-rs", enc_name, part)]
            our_n, our_rate = rust_rates[("plancache", enc_name, part)]
            if not tik_n == our_n == n:
                sys.exit(f"token counts differ for {enc_name} {part}: python {n}, tiktoken-rs {tik_n}, plancache {our_n}")
            print(
                f"{enc_name:<12} {part:<6} {n:>9} {py_rate:>12.1f} {tik_rate:>12.1f} {our_rate:>10.1f}"
                f" {tik_rate / py_rate:>14.2f}x {our_rate / py_rate:>12.2f}x"
            )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
