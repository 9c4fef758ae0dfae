#!/usr/bin/env python3
"""tests/bench/summary_ddp_table.py DIR: the table of tests/bench/ddp_table.sh from DIR's NAME.rR.jsonl
(ddprun --metrics, read by metrics_run.py) and torch.log (torch_fsdp.py's TORCH_FSDP lines): per plan the
median over the rounds of each round's median step, every round's median, the ratio to our one-GPU step
(single.rR.jsonl, GPU 0: the median over its rounds), the median over the rounds of each round's median wall time per step (host_ms) and its
ratio to the one-GPU run's, the mean wall time per step over all rounds' timed steps and its ratio, tokens/s and its ratio to PyTorch DDP's, the mean communication, exposed and optimizer-tail
ms, the peak GiB per rank, and the energy (J per step, all GPUs, and W per GPU: metrics_run.energy(), the
mean over the rounds; nan without energy metrics) with the power-capped ms per step (the mean over GPUs); then the loss of the last step per plan (the same data and
seed). With single_gpuG rows (ddp_table.sh's SINGLE_GPUS), a line before the losses gives each plan's ratio to the slowest
GPU's one-GPU step as well: the ranks run at the pace of the slowest GPU, and the GPUs of one machine differ
by up to a few percent at the power limit. Runs of 100 steps or more add a line per plan: the medians of the
step, the optimizer's tail and the backward over steps 6-30 and over steps 100-last of the same run (round
1), so that steady state is compared within a run, not across calls."""
import json
import os
import statistics
import sys

from metrics_run import by_plan

d = sys.argv[1]
runs, bad = by_plan(d)
for name, e in bad:
    print(f"{name}: unreadable ({e})")
torch = {}
if os.path.exists(os.path.join(d, "torch.log")):
    for l in open(os.path.join(d, "torch.log")):
        if l.startswith("TORCH_FSDP "):
            j = json.loads(l[len("TORCH_FSDP "):])
            if "ms_per_step" in j:
                torch[j["mode"] + ("" if j["mode"] == "ddp" else f" reshard={j.get('reshard_after_forward')}")] = j
one = statistics.median(r["ms"] for r in runs["single"]) if "single" in runs else None
one_host = statistics.median(r["host"] for r in runs["single"]) if "single" in runs else None
one_mean = statistics.mean(r["host_mean"] for r in runs["single"]) if "single" in runs else None
tddp = torch.get("ddp", {}).get("tokens_per_s")
print(f"{'plan':20s} {'ms/step':>8s} {'rounds':>15s} {'x 1 GPU':>8s} {'wall ms':>8s} {'x 1 GPU':>8s} {'mean':>7s} {'x 1 GPU':>8s} {'tokens/s':>9s} {'x torch':>8s} "
      f"{'comm':>6s} {'exposed':>8s} {'opt tail':>8s} {'GiB':>5s} {'J/step':>7s} {'W/GPU':>6s} {'capped':>6s}")
for name, rs in runs.items():
    ms = statistics.median(r["ms"] for r in rs)
    host = statistics.median(r["host"] for r in rs)
    hmean = statistics.mean(r["host_mean"] for r in rs)
    tps = statistics.median(r["tps"] for r in rs)
    rounds = "/".join(f"{r['ms']:.2f}" for r in rs)
    mean = lambda k: statistics.mean(r[k] for r in rs)
    print(f"{name:20s} {ms:8.2f} {rounds:>15s} {ms / one if one else float('nan'):8.3f} {host:8.2f} "
          f"{host / one_host if one_host else float('nan'):8.3f} {hmean:7.2f} {hmean / one_mean if one_mean else float('nan'):8.3f} {tps:9.0f} "
          f"{tps / tddp if tddp else float('nan'):8.2f} {mean('comm'):6.2f} {mean('exposed'):8.2f} {mean('opt'):8.2f} "
          f"{max(max(r['peak']) for r in rs):5.1f} {mean('joules'):7.2f} {mean('watts'):6.0f} {mean('capped'):6.1f}")
for k, j in torch.items():
    print(f"torch {k:14s} {j['ms_per_step']:8.2f} {'':>15s} {'':>8s} {'':>8s} {'':>8s} {'':>7s} {'':>8s} {j['tokens_per_s']:9.0f} "
          f"{j['tokens_per_s'] / tddp if tddp else float('nan'):8.2f} {'':>6s} {'':>8s} {'':>8s} "
          f"{max(j.get('peak_alloc_GiB') or [float('nan')]):5.1f}")
singles = {n: statistics.median(r["ms"] for r in rs) for n, rs in runs.items() if n == "single" or n.startswith("single_gpu")}
if len(singles) > 1:
    slow_name = max(singles, key=singles.get)
    slow = singles[slow_name]
    print("one-GPU step by GPU: " + ", ".join(f"{n} {v:.2f}" for n, v in singles.items()) +
          f"; against the slowest ({slow_name}): " +
          ", ".join(f"{n} {statistics.median(r['ms'] for r in rs) / slow:.3f}" for n, rs in runs.items() if n not in singles))
for name, rs in runs.items():
    w = rs[0]["windows"]
    if w:
        print(f"steps 6-30 / 100-last, {name}: " + ", ".join(
            f"{k[:-3]} {w[(6, 30)][k]:.2f} / {w[(100, None)][k]:.2f}" for k in ("step_ms", "optimizer_ms", "backward_ms")))
print("last loss per plan:", ", ".join(f"{n} {rs[-1]['losses'][-1]:.6f}" for n, rs in runs.items() if rs[-1]["losses"]))
