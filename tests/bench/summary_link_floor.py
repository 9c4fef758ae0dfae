#!/usr/bin/env python3
"""tests/bench/summary_link_floor.py DIR: the table of tests/bench/device_link_floor.sh from its logs.

The copy engines' rate (LINK_LOAD lines of bw_*.log); then per load of the one-GPU step (step_<load>.g<G>.r<R>
.jsonl, ddprun --metrics): each GPU's step (the median over the rounds of each run's median), its ratio to
the same GPU with no load, the slower GPU's ratio (the pace two ranks would run at), joules per step and
watts per GPU (metrics_run.energy), the GB each GPU received per step from its load (DDP_LINK_LOAD_MB's
closing line in step_*.log: MiB x the steps that issued theirs; for a "Gp" load the link_load.py processes'
achieved GB/s x the step) and the joules each extra GB cost: (J/step - J/step with no load) / (GB received + GB sent
per GPU per step), both GPUs summed. Last, with ddp_table/ present, the 2-rank plans against the slower GPU's
one-GPU step of the same call (the ratio issue 17 sets its targets on)."""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics_run  # noqa: E402


def link_lines(paths):
    out = []
    for p in paths:
        for line in open(p):
            if line.startswith("LINK_LOAD "):
                out.append(json.loads(line[10:]))
    return out


def main():
    d = sys.argv[1]
    print("## the copy engines over NVLink (link_load.py, unpaced)")
    one = link_lines(glob.glob(f"{d}/bw_one.log"))
    both = link_lines(sorted(glob.glob(f"{d}/bw_both_*.log")))
    for r in one:
        print(f"GPU {r['gpu']} pulls from GPU {r['peer']} alone: {r['GBps']:.1f} GB/s")
    for r in both:
        print(f"both at once: GPU {r['gpu']} pulls from GPU {r['peer']}: {r['GBps']:.1f} GB/s")

    runs = {}  # load -> gpu -> [metrics_run.ours]
    for p in glob.glob(f"{d}/step_*.g*.r*.jsonl"):
        m = re.match(r"step_([\w.]+?)\.g(\d)\.r(\d+)\.jsonl$", os.path.basename(p))
        try:
            runs.setdefault(m[1], {}).setdefault(int(m[2]), []).append(metrics_run.ours(p))
        except (ValueError, KeyError) as e:
            print(f"{p}: unreadable ({e})")
    loads = {}  # "Gp" load -> gpu -> achieved GB/s (link_load.py processes)
    for p in glob.glob(f"{d}/load_*_g*.r*.log"):
        m = re.match(r"load_(\w+)_g(\d)\.r\d+\.log$", os.path.basename(p))
        for r in link_lines([p]):
            loads.setdefault(m[1], {}).setdefault(int(m[2]), []).append(r["GBps"])
    pulled = {}  # in-process load -> gpu -> [GB per step]: DDP_LINK_LOAD_MB's closing line (skipped steps pull nothing)
    for p in glob.glob(f"{d}/step_*.g*.r*.log"):
        m = re.match(r"step_([\w.]+?)\.g(\d)\.r\d+\.log$", os.path.basename(p))
        for line in open(p, errors="replace"):
            x = re.search(r"DDP_LINK_LOAD_MB: (\d+) of (\d+) steps pulled (\d+) MiB each", line)
            if x:
                gb = int(x[3]) * 2**20 / 1e9 * int(x[1]) / max(1, int(x[2]))
                pulled.setdefault(m[1], {}).setdefault(int(m[2]), []).append(gb)

    def key(ld):
        return (ld[-1] if ld[-1] in "cmlp" else "", float(ld.rstrip("cmlp")))

    print("\n## the one-GPU XL step under a load (both GPUs at once; GB a GPU receives per step, and sends as many; "
          "G: DDP_LINK_LOAD_MB from the other process's memory by CUDA IPC, Gc: from memory this process allocated on the other GPU, "
          "Gm: the IPC source set up, nothing copied, Gl: G GB copied within the GPU, Gp: link_load.py processes beside the steps)")
    print(f"{'load':>5s} | {'GPU 0 ms':>8s} {'GPU 1 ms':>8s} | {'x alone 0':>9s} {'x alone 1':>9s} {'slower':>7s} | "
          f"{'J/step 0':>8s} {'J/step 1':>8s} {'W 0':>5s} {'W 1':>5s} | {'GB/step':>7s} {'J/GB':>6s} | rounds")
    base = runs.get("0", {})
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    b_ms = {g: med([r["ms"] for r in base.get(g, [])]) for g in (0, 1)}
    b_j = {g: med([r["joules"] for r in base.get(g, [])]) for g in (0, 1)}
    for ld in sorted(runs, key=key):
        g = runs[ld]
        ms = {i: med([r["ms"] for r in g.get(i, [])]) for i in (0, 1)}
        j = {i: med([r["joules"] for r in g.get(i, [])]) for i in (0, 1)}
        w = {i: med([r["watts"] for r in g.get(i, [])]) for i in (0, 1)}
        x = {i: ms[i] / b_ms[i] for i in (0, 1)}
        slower = max(ms.values()) / max(b_ms.values())
        if ld in pulled:
            gb = {i: med(pulled[ld].get(i, [])) for i in (0, 1)}  # received per step
        else:
            gb = {i: med(loads.get(ld, {}).get(i, [])) * ms[i] / 1e3 for i in (0, 1)}
        moved = 0.0 if ld.endswith("l") else sum(gb.values()) * 2  # each GB is received by one GPU and sent by the other
        jgb = (sum(j.values()) - sum(b_j.values())) / moved if moved >= 0.1 else float("nan")  # not for a token load
        rounds = "/".join(f"{r['ms']:.2f}" for i in (0, 1) for r in g.get(i, []))
        gbs = f"{statistics.mean(gb.values()):7.2f}" if moved > 0 else f"{'-':>7s}"
        print(f"{ld:>5s} | {ms[0]:8.2f} {ms[1]:8.2f} | {x[0]:9.3f} {x[1]:9.3f} {slower:7.3f} | {j[0]:8.2f} {j[1]:8.2f} "
              f"{w[0]:5.0f} {w[1]:5.0f} | {gbs} {jgb:6.3f} | {rounds}")

    t = f"{d}/ddp_table"
    if os.path.isdir(t):
        print("\n## the 2-rank plans, same call (ddp_table.sh): against the slower GPU's one-GPU step")
        runs, _ = metrics_run.by_plan(t)
        singles = {n: [r["ms"] for r in rs] for n, rs in runs.items() if n.startswith("single")}
        plans = {n: rs for n, rs in runs.items() if not n.startswith("single")}
        slow = max(med(v) for v in singles.values()) if singles else float("nan")
        print(f"one GPU: " + ", ".join(f"{k} {med(v):.2f} ms" for k, v in sorted(singles.items())))
        both = max(b_ms.values())  # the slower GPU with no load, both GPUs running at once (above)
        print(f"(x both: against the slower GPU of the no-load rows above, {both:.2f} ms, where both GPUs ran at once)")
        for n, rs in sorted(plans.items()):
            ms = med([r["ms"] for r in rs])
            print(f"{n:36s} {ms:7.2f} ms  x{ms / slow:.3f}  x both {ms / both:.3f}  J/step (both GPUs) "
                  f"{med([r['joules'] for r in rs]):6.1f}  rounds " + "/".join(f"{r['ms']:.2f}" for r in rs))


if __name__ == "__main__":
    main()
