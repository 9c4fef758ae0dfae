#!/usr/bin/env python3
"""tests/bench/summary_sharding.py LOGS: the table of tests/bench/sharding_2gpu.sh from the files under LOGS:
ours from shard_<name>.jsonl (ddprun --metrics: median step_ms of the steps not marked warmup, tokens/s =
the run line's tokens_per_step over it, mean exposed_comm_ms and overlap_ratio, peak memory per rank = the
largest rank_peak_mem_GiB[r] of those steps; a run without metrics shows the last line of shard_<name>.log),
PyTorch from torch_fsdp.log (TORCH_FSDP lines of tests/bench/torch_fsdp.py: peak allocated/reserved per
rank). The last column is ms/step over PyTorch FSDP2's with reshard_after_forward true (below 1: faster)."""
import glob
import json
import os
import sys

from metrics_run import ours  # noqa: E402  (tests/bench/metrics_run.py, beside this script)


def torch_rows(path):
    rows = []
    for l in open(path) if os.path.exists(path) else []:
        if l.startswith("TORCH_FSDP "):
            rows.append(json.loads(l[len("TORCH_FSDP "):]))
    return rows


def torch_name(r):
    if r["mode"] == "fsdp2":
        p = f" prefetch {r['prefetch']}" if r.get("prefetch") else ""
        return f"torch fsdp2 reshard={str(r['reshard_after_forward']).lower()}{p}"
    return f"torch {r['mode']} (25 MB buckets)"


def main(logs):
    trows = torch_rows(f"{logs}/torch_fsdp.log")
    ref = next((r["ms_per_step"] for r in trows if r.get("mode") == "fsdp2" and r.get("reshard_after_forward") is True
                and "ms_per_step" in r), None)
    ratio = lambda ms: f"{ms / ref:9.3f}" if ref else f"{'-':>9s}"
    print(f"{'run':34s} {'ms/step':>9s} {'tokens/s':>10s} {'exposed':>8s} {'overlap':>8s}  {'peak GiB per rank':24s} {'/ torch':>9s}")
    for p in sorted(glob.glob(f"{logs}/shard_*.jsonl")) + sorted(
            set(glob.glob(f"{logs}/shard_*.log")) - {p[:-6] + ".log" for p in glob.glob(f"{logs}/shard_*.jsonl")}):
        name = os.path.basename(p)[len("shard_"):].rsplit(".", 1)[0]
        try:
            if p.endswith(".log"):
                raise ValueError("no metrics")
            o = ours(p)
        except (ValueError, KeyError, json.JSONDecodeError) as e:
            log = p.rsplit(".", 1)[0] + ".log"
            last = open(log).read().strip().splitlines()[-1:] if os.path.exists(log) else []
            print(f"{name:34s} failed: {(last[0] if last else str(e))[:90]}")
            continue
        peak = "/".join(f"{g:.1f}" for g in o["peak"])
        print(f"{name:34s} {o['ms']:9.2f} {o['tps']:10.0f} {o['exposed']:8.2f} {o['overlap']:8.3f}  {peak:24s} {ratio(o['ms'])}")
    for r in trows:
        if "error" in r:
            print(f"{torch_name(r):34s} failed: {r['error'][:90]}")
        elif "ms_per_step" in r:
            peak = "/".join(f"{a:.1f}({b:.1f})" for a, b in zip(r["peak_alloc_GiB"], r["peak_reserved_GiB"]))
            print(f"{torch_name(r):34s} {r['ms_per_step']:9.2f} {r['tokens_per_s']:10.0f} {'-':>8s} {'-':>8s}  {peak:24s} {ratio(r['ms_per_step'])}")
    # the check: every level's per-step losses agree with DDP's to bf16 tolerance (2e-2 relative)
    base = next((p for p in sorted(glob.glob(f"{logs}/shard_*.jsonl")) if "bucketed" in p and "1gpu" not in p
                 and "_1." not in p), None)
    if base:
        try:
            b = ours(base)["losses"]
            for p in sorted(glob.glob(f"{logs}/shard_*.jsonl")):
                o = ours(p)
                if o["world"] != ours(base)["world"] or p == base:
                    continue
                worst = max(abs(x - y) / abs(y) for x, y in zip(o["losses"], b))
                print(f"losses of {os.path.basename(p)} vs {os.path.basename(base)}: {len(b)} steps, max rel diff "
                      f"{worst:.2e} ({'ok' if worst < 2e-2 else 'FAIL'}: bf16 tolerance 2e-2)")
        except (ValueError, KeyError, json.JSONDecodeError, ZeroDivisionError) as e:
            print("losses: not compared:", e)
    print("ours: median step of the timed steps, exposed/overlap means, peak = the runtime's per-rank peak (rank_peak_mem_GiB);")
    print("torch: median of CUDA-event step times, peak = max_memory_allocated (max_memory_reserved) per rank;")
    print("/ torch = ms/step over PyTorch FSDP2 reshard_after_forward=True" + ("" if ref else " (no such run: -)"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summary_sharding.py LOGS")
    main(sys.argv[1])
