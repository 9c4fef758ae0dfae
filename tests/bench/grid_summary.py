#!/usr/bin/env python3
"""tests/bench/grid_summary.py LOGDIR: the tables of tests/bench/device_grid.sh from its logs.

Ours: grid_train_<size>_<prec>_<ctx>_<batch>.jsonl (training plan) and grid_forward_*.jsonl (forward-only
plan), per-step JSON lines of ddprun --metrics. PyTorch: torch_eager_<size>_<ctx>_<batch>.log and
torch_compile_*.log, ANCHOR lines of torch_ddp_anchor.py (variant "local", median ms)."""
import glob
import json
import os
import statistics
import sys


ORDER = {"small": 0, "medium": 1, "large": 2, "xl": 3, "2.7b": 4}  # the sizes in the tables' order


def steps(path):
    rows, mem = [], None
    for line in open(path):
        r = json.loads(line)
        if "step" in r:
            rows.append(r)
        elif r.get("event") == "memory":
            mem = r
    return rows, mem


def stats(rows, key):
    t = [r[key] for r in rows if not r["warmup"]] or [r[key] for r in rows]
    return statistics.mean(t), (statistics.pstdev(t) if len(t) > 1 else 0.0), len(t)


def anchor(path, variant="local"):
    if not os.path.exists(path):
        return None
    for line in open(path):
        if line.startswith("ANCHOR") and f'"variant": "{variant}"' in line:
            return json.loads(line[7:])["iter_ms"]
    return None


def main():
    d = sys.argv[1]
    print("\n## headline: XL bf16, context 512, batch 4 (5 warm-up, 15 timed)")
    try:
        rows, mem = steps(f"{d}/headline_xl.jsonl")
        m, s, n = stats(rows, "step_ms")
        f, b, o, u = (stats(rows, k)[0] for k in ("forward_ms", "backward_ms", "optimizer_ms", "mfu"))
        print(f"ours {m:.2f} ms (std {s:.2f}, n {n}): forward {f:.2f}, backward {b:.2f}, optimizer {o:.2f}; MFU {u:.3f}; "
              f"{rows[-1]['peak_mem_GiB']:.2f} GiB in use, planner {mem['plan_total_GiB']:.2f} GiB")
        for name in ("eager", "compile"):
            t = anchor(f"{d}/torch_{name}_xl_512_4.log")
            print(f"pytorch {name}: {t:.2f} ms -> ours/pytorch = {m / t:.3f}" if t else f"pytorch {name}: missing")
    except Exception as e:  # a missing log is reported, not fatal
        print("headline missing:", e)

    print("\n## grid (bf16 unless named; training plans 3 warm-up + 7 timed, forward-only plans 2 + 5)")
    hdr = (f"{'size':6s} {'ctx':>5s} {'b':>3s} {'prec':4s} | {'step ms':>8s} {'std':>5s} {'fwd':>7s} {'f+b':>7s} {'opt':>6s}"
           f" {'MFU':>5s} {'GiB':>6s} {'plan':>6s} | {'s1':>7s} {'s2':>7s} {'s3':>7s} | {'fwd-only':>8s} {'std':>5s}"
           f" {'GiB':>6s} {'plan':>6s} | {'torch':>7s} {'ratio':>5s}")
    print(hdr)
    tags = []
    for p in glob.glob(f"{d}/grid_train_*.jsonl"):
        size, prec, ctx, b = os.path.basename(p)[len("grid_train_"):-len(".jsonl")].split("_")
        tags.append((ORDER.get(size, 9), prec, int(ctx), int(b), size))
    for _, prec, ctx, b, size in sorted(tags):
        tag = f"{size}_{prec}_{ctx}_{b}"
        try:
            rows, mem = steps(f"{d}/grid_train_{tag}.jsonl")
            m, s, _ = stats(rows, "step_ms")
            f, bw, o, u = (stats(rows, k)[0] for k in ("forward_ms", "backward_ms", "optimizer_ms", "mfu"))
            first = [r["step_ms"] for r in rows[:3]] + [0.0] * (3 - len(rows[:3]))
            line = (f"{size:6s} {ctx:5d} {b:3d} {prec:4s} | {m:8.2f} {s:5.2f} {f:7.2f} {f + bw:7.2f} {o:6.2f} {u:5.3f}"
                    f" {rows[-1]['peak_mem_GiB']:6.2f} {mem['plan_total_GiB']:6.2f} | {first[0]:7.2f} {first[1]:7.2f}"
                    f" {first[2]:7.2f} |")
        except Exception as e:
            line = f"{size:6s} {ctx:5d} {b:3d} {prec:4s} | training run missing ({e})"
        fp = f"{d}/grid_forward_{tag}.jsonl"
        if os.path.exists(fp):
            try:
                rows, mem = steps(fp)
                m2, s2, _ = stats(rows, "step_ms")
                line += f" {m2:8.2f} {s2:5.2f} {rows[-1]['peak_mem_GiB']:6.2f} {mem['plan_total_GiB']:6.2f} |"
            except Exception as e:
                line += f" forward missing ({e}) |"
        else:
            line += f" {'':8s} {'':5s} {'':6s} {'':6s} |"
        t = anchor(f"{d}/torch_eager_{size}_{ctx}_{b}.log") if prec == "bf16" else None
        if t and "missing" not in line:
            line += f" {t:7.2f} {m / t:5.3f}"
        print(line)
    print("columns: s1/s2/s3 = the first three steps (0, 1 and 2 warm-up steps before them); GiB = memory in use "
          "(cudaMemGetInfo, CUDA context included); plan = the planner's prediction; torch = PyTorch eager (autocast, "
          "fused AdamW) median step; ratio = ours / torch")


if __name__ == "__main__":
    main()
