#!/usr/bin/env python3
"""Replays plancache's own token ids through the real cache-management code of vLLM
(KVCacheManager / BlockPool) or SGLang (RadixCache) on CPU and compares, request by request,
the cached tokens the engine reports with plancache's `paged` and `radix` predictions.

Input: the session files written by `cargo run --release --example export_tokens`.
The two engines pin conflicting dependencies, so each runs from its own virtualenv:

    /work/venv-vllm/bin/python   crosscheck.py vllm   DIR
    /work/venv-sglang/bin/python crosscheck.py sglang DIR

Events follow plancache's order: requests in send order; before a request, every request
completed by its send time is finished (in completion order); the prompt is looked up, then
the request's blocks or tree path are allocated or inserted: prompt, then what was generated
(reasoning, then the visible reply). Reasoning tokens get ids unique to the request (they never
reappear in a prompt), numbered as plancache numbers them. Nothing of plancache's model is used
here: only its token ids, times and its predictions, to compare against.
"""

import argparse
import glob
import json
import os
import sys
import time


def sessions(directory):
    paths = sorted(glob.glob(os.path.join(directory, "session-*.jsonl")))
    paths += sorted(glob.glob(os.path.join(directory, "pool-*.jsonl")))
    if not paths:
        sys.exit(
            f"{directory}: no session-*.jsonl or pool-*.jsonl files "
            "(run the export_tokens example first)"
        )
    for path in paths:
        with open(path) as f:
            meta = json.loads(f.readline())
            reqs = [json.loads(line) for line in f if line.strip()]
        yield path, meta, reqs


def reasoning_ids(meta, counter, n):
    base = meta["reasoning_base"]
    return [base + (counter + i) % (2**32 - base) for i in range(n)], counter + n


def overlapping(reqs, shared_pool=False, block=16):
    """Indices of requests sent while an earlier one had not begun its response: plancache
    treats that one's entries as in flight, an engine that allocates at schedule time does not.
    Also those sent while another stream's request was decoding. On a shared pool (several
    sessions), only an earlier request that shares the first block of the prompt (same model)
    counts: one with no content in common changes nothing but the pool's room, which the
    replay follows in plancache's order."""

    def key(r):
        return (r["model"], tuple(r["prompt"][:block])) if shared_pool else None

    out, active = set(), []
    for i, r in enumerate(reqs):
        t = r["sent_at_ms"]
        active = [p for p in active if p["completed_at_ms"] > t]
        k = key(r)
        for p in active:
            if shared_pool and key(p) != k:
                continue
            if p["sent_at_ms"] <= t < p["visible_at_ms"] or (
                p["visible_at_ms"] <= t and p["stream"] != r["stream"]
            ):
                out.add(i)
                break
        active.append(r)
    return out


def finish_due(running, now, release):
    due = sorted((r for r in running if r[0] <= now), key=lambda r: (r[0], r[1]))
    for r in due:
        release(r[2])
    running[:] = [r for r in running if r[0] > now]


def replay_vllm(meta, reqs):
    import torch
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.request import Request

    bs = meta["block_size"]
    spec = FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=1, dtype=torch.float32)
    # vLLM keeps one block of the pool aside (the null block): one more gives plancache's count.
    cfg = KVCacheConfig(
        num_blocks=meta["capacity_blocks"] + 1,
        kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)],
    )
    init_none_hash(sha256)
    hasher = get_request_block_hasher(bs, sha256)
    mgr = KVCacheManager(
        cfg, max_model_len=10**8, scheduler_block_size=bs, hash_block_size=bs, enable_caching=True
    )
    running, out, counter = [], [], 0
    for i, r in enumerate(reqs):
        finish_due(running, r["sent_at_ms"], mgr.free)
        prompt = r["prompt"]
        # Caches are per model: the model name salts the first block, as cache_salt does.
        req = Request(
            f"r{i}", list(prompt), SamplingParams(max_tokens=1 << 20), None,
            cache_salt=r["model"], block_hasher=hasher,
        )
        blocks, hit, _ = mgr.get_computed_blocks(req)
        if mgr.allocate_slots(req, len(prompt) - hit, hit, blocks) is None:
            out.append((hit, "pool full"))
            continue
        req.num_computed_tokens = len(prompt)
        gen, counter = reasoning_ids(meta, counter, r["reasoning"])
        gen += r["reply"]
        if gen:
            # Decode: every generated token but the last is fed back and computed.
            req.append_output_token_ids(gen)
            if len(gen) > 1 and mgr.allocate_slots(req, len(gen) - 1) is None:
                # The scheduler would preempt; the prompt's blocks are freed at completion.
                running.append((r["completed_at_ms"], i, req))
                out.append((hit, "pool full"))
                continue
            req.num_computed_tokens += len(gen) - 1
        running.append((r["completed_at_ms"], i, req))
        out.append((hit, None))
    return out


def replay_sglang(meta, reqs):
    from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams, MatchPrefixParams
    from sglang.srt.mem_cache.radix_cache import RadixCache, RadixKey

    class Allocator:
        """Stands in for the KV pool: the tree frees indices into it on eviction."""

        device = "cpu"

        def free_segment(self, *args, **kwargs):
            pass

        def free(self, *args, **kwargs):
            pass

    page = meta["page_size"]
    cache = RadixCache.create_simulated(page_size=page, mock_allocator=Allocator())
    cap = meta["capacity_tokens"]
    running, out, counter = [], [], 0
    for i, r in enumerate(reqs):
        finish_due(running, r["sent_at_ms"], cache.dec_lock_ref)
        prompt, model = r["prompt"], r["model"]
        m = cache.match_prefix(MatchPrefixParams(key=RadixKey(list(prompt), extra_key=model)))
        # The scheduler caps the reuse at prompt - 1, page aligned (schedule_batch).
        hit = min(m.device_prefix_len, (len(prompt) - 1) // page * page)
        gen, counter = reasoning_ids(meta, counter, r["reasoning"])
        seq = list(prompt) + gen + r["reply"]
        if not meta["cache_last_token"] and len(seq) > len(prompt):
            seq = seq[:-1]
        # The prompt is a node of its own (checkpoint splits at the prompt boundary), then
        # the output follows it.
        cache.insert(InsertParams(key=RadixKey(list(prompt), extra_key=model), value=None))
        res = cache.insert(InsertParams(key=RadixKey(seq, extra_key=model), value=None))
        node = res.last_device_node
        cache.inc_lock_ref(node)
        running.append((r["completed_at_ms"], i, node))
        total = cache.evictable_size() + cache.protected_size()
        if total > cap:
            cache.evict(EvictParams(num_tokens=total - cap))
        out.append((hit, None))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engine", choices=["vllm", "sglang"])
    ap.add_argument("dir")
    ap.add_argument("--show", type=int, default=10, help="mismatches to print")
    args = ap.parse_args()
    if args.engine == "vllm":
        import vllm as pkg

        replay, key = replay_vllm, "paged"
    else:
        import sglang as pkg

        replay, key = replay_sglang, "radix"
    t0 = time.time()
    total = agree = over_total = over_agree = full = 0
    evicting = 0
    shown = 0
    n_sessions = 0
    n_pools = 0
    for path, meta, reqs in sessions(args.dir):
        n_sessions += len(meta.get("sessions", meta.get("traces", [0])))
        got = replay(meta, reqs)
        pool = "pool" in meta or "traces" in meta
        n_pools += pool
        over = overlapping(reqs, pool, meta["block_size"])
        small = meta["capacity_blocks"] < 32768 if key == "paged" else meta["capacity_tokens"] < 524288
        evicting += small
        for i, ((hit, note), r) in enumerate(zip(got, reqs)):
            want = r["plancache"][key]
            total += 1
            ok = hit == want and note is None
            agree += ok
            full += note is not None
            if i in over:
                over_total += 1
                over_agree += ok
            if not ok and shown < args.show:
                shown += 1
                print(
                    f"  {os.path.basename(path)} request {i} ({r['stream']}, prompt {len(r['prompt'])}, "
                    f"reasoning {r['reasoning']}, reply {len(r['reply'])}): {args.engine} {hit}"
                    f"{' (' + note + ')' if note else ''}, plancache {key} {want}"
                    f"{', overlaps an earlier request' if i in over else ''}"
                )
    seq_total, seq_agree = total - over_total, agree - over_agree
    print(f"{args.engine} {pkg.__version__} vs plancache {key}: {n_sessions} sessions "
          f"in {n_pools} shared pools, " if n_pools else
          f"{args.engine} {pkg.__version__} vs plancache {key}: {n_sessions} sessions ", end="")
    print(f"({evicting} files on a pool small enough to evict), {total} requests")
    print(f"  agree on {agree}/{total} requests = {100.0 * agree / max(total, 1):.2f} %")
    print(f"  sequential requests: {seq_agree}/{seq_total}; requests overlapping an earlier "
          f"one's prefill or another stream's decode: {over_agree}/{over_total}")
    if full:
        print(f"  {full} requests found the pool full")
    print(f"  {time.time() - t0:.1f} s")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
