#!/usr/bin/env python3
"""tests/bench/summary_pipeline.py LOGS: the table of tests/bench/pipeline_2gpu.sh from the files under LOGS.
Ours, per run pipe_<schedule>_m<M>: from pipe_<name>.jsonl (ddprun --metrics) the median step_ms of the
steps not marked warmup, leaving out the last step (the traced one, slowed by an event around every
instruction), tokens/s = the run line's tokens_per_step over it, and the peak memory per stage = the
largest rank_peak_mem_GiB[r] minus mem_base_GiB (the memory line: the CUDA context and libraries, rank
0's, taken for both GPUs); the planner's peak per stage from pipe_<name>.explain.json (ddpc explain --json:
ranks[r].memory_bytes.total); the bubble measured in the traced step and the schedule's formula from
pipe_<name>.timeline.jsonl (ddpc plot timeline's summary line), and the bubble from the metrics'
per-rank times, mean over the ranks of (step - forward - backward - optimizer) / (step - optimizer) at
each step (only where the plan has the microbatch timing points, else "-"). PyTorch from
torch_pipeline.log (TORCH_PIPE lines). The p2p column: how the run's messages moved (the run line's "p2p":
ce = copy engine, nccl). The last column is our tokens/s over PyTorch's with the same
schedule and microbatches (interleaved, zero bubble and sequential against PyTorch's 1F1B; above 1:
faster)."""
import glob
import json
import os
import re
import statistics
import sys


def load(path):
    return [json.loads(l) for l in open(path) if l.strip().startswith("{")] if os.path.exists(path) else []


def ours(d, name):
    lines = load(f"{d}/pipe_{name}.jsonl")
    run = next((l for l in lines if l.get("event") == "run"), {})
    mem = next((l for l in lines if l.get("event") == "memory"), {})
    steps = [l for l in lines if "step" in l]
    if not steps:
        raise ValueError("no step lines")
    t = [s for s in steps if not s.get("warmup")] or steps
    if len(t) > 2 and not name.startswith("single"):  # the 2-rank runs traced their last step
        t = t[:-1]
    ms = statistics.median(s["step_ms"] for s in t)
    world = run.get("world", 1)
    base = mem.get("mem_base_GiB", 0.0)
    peak = [max(s["rank_peak_mem_GiB"][r] for s in t) - base for r in range(world)]
    bub = None
    if all(k in t[0] for k in ("rank_forward_ms", "rank_backward_ms")):
        vals = []
        for s in t:
            for r in range(world):
                o, slow = s["rank_optimizer_ms"][r], max(s["rank_step_ms"])
                if slow - o > 0:
                    vals.append(max(0.0, slow - s["rank_forward_ms"][r] - s["rank_backward_ms"][r] - o) / (slow - o))
        bub = statistics.mean(vals) if vals else None
    ex = {}
    if os.path.exists(f"{d}/pipe_{name}.explain.json"):
        ex = json.load(open(f"{d}/pipe_{name}.explain.json"))
    pred = [r["memory_bytes"]["total"] / 2**30 for r in ex.get("ranks", [])]
    tl = [l for l in load(f"{d}/pipe_{name}.timeline.jsonl") if l.get("event") == "timeline"]
    p2p = run.get("p2p", "")
    p2p = "ce" if p2p.startswith("copy") else "nccl" if p2p.startswith("nccl") else "-"
    return dict(ms=ms, tps=run["tokens_per_step"] / (ms * 1e-3), peak=peak, pred=pred, bub_metrics=bub, p2p=p2p,
                bub_trace=tl[0]["bubble_measured"] if tl else None, bub_formula=tl[0].get("bubble_formula") if tl else None)


def torch_rows(d):
    rows = {}
    p = f"{d}/torch_pipeline.log"
    for l in open(p) if os.path.exists(p) else []:
        if l.startswith("TORCH_PIPE "):
            r = json.loads(l[len("TORCH_PIPE "):])
            rows[(r["schedule"], r["microbatches"])] = r
    return rows


def f(x, fmt):
    return fmt.format(x) if x is not None else "-".rjust(len(fmt.format(0.0)))


def gib(v):
    return "/".join(f"{x:.1f}" for x in v) if v else "-"


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/logs"
    torch = torch_rows(d)
    names = sorted({re.sub(r"^pipe_|\.log$", "", os.path.basename(p)) for p in glob.glob(f"{d}/pipe_*.log")})
    order = ["single", "sequential", "gpipe", "1f1b", "interleaved", "zero_bubble"]
    def key(n):
        s = n.rsplit("_m", 1)
        k = next((i for i, o in enumerate(order) if n.startswith(o)), len(order))
        return (k, int(s[1]) if len(s) == 2 and s[1].isdigit() else 0, n)
    print(f"{'run':26s} {'p2p':>4s} {'ms/step':>9s} {'tokens/s':>9s} {'bubble':>7s} {'formula':>7s} {'metrics':>7s} "
          f"{'peak GiB s0/s1':>15s} {'planned':>11s} {'vs torch':>9s}")
    for n in sorted(names, key=key):
        try:
            o = ours(d, n)
        except Exception as e:  # noqa: BLE001
            log = f"{d}/pipe_{n}.log"
            last = open(log).read().strip().splitlines()[-1:] if os.path.exists(log) else []
            print(f"{n:26s} not measured: {last[0] if last else e}"[:150])
            continue
        m = re.search(r"_m(\d+)$", n)
        sched = n[: m.start()] if m else n
        tr = torch.get((sched if sched in ("gpipe", "1f1b") else "1f1b", int(m.group(1)) if m else 0))
        ratio = o["tps"] / tr["tokens_per_s"] if tr and tr.get("tokens_per_s") else None
        print(f"{n:26s} {o['p2p']:>4s} {o['ms']:9.2f} {o['tps']:9.0f} {f(o['bub_trace'], '{:7.3f}')} {f(o['bub_formula'], '{:7.3f}')} "
              f"{f(o['bub_metrics'], '{:7.3f}')} {gib(o['peak']):>15s} {gib(o['pred']):>11s} {f(ratio, '{:9.2f}')}")
    if torch:
        print(f"\nPyTorch torch.distributed.pipelining ({next(iter(torch.values())).get('torch', '?')}):")
        print(f"{'schedule':12s} {'m':>3s} {'ms/step':>9s} {'tokens/s':>9s} {'peak alloc GiB s0/s1':>21s}")
        for (s, mb), r in sorted(torch.items(), key=lambda kv: (kv[0][0] != "gpipe", kv[0][1])):
            if "error" in r:
                print(f"{s:12s} {mb:3d} error: {r['error']}"[:150])
            else:
                print(f"{s:12s} {mb:3d} {r['ms_per_step']:9.2f} {r['tokens_per_s']:9.0f} {gib(r['peak_alloc_GiB']):>21s}")
    else:
        print("\nPyTorch: no TORCH_PIPE lines (torch_pipeline.log missing or empty)")


if __name__ == "__main__":
    main()
