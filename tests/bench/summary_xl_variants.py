#!/usr/bin/env python3
"""tests/bench/summary_xl_variants.py LOGS CEILING VARIANTS TRACED: the table of the one-GPU XL variant scripts
(device_update_sms.sh, device_side_sms.sh). VARIANTS and TRACED are space-separated name:... entries; per
variant and round it reads LOGS/xl_NAME_R.jsonl (ddprun --metrics) and prints the medians of the timed steps
(ms/step, forward, backward, the optimizer's tail, mfu, host issue time), the last loss and the ratio to
torch.compile (LOGS/torch_compile.log, when there); the mean wall time per step (host_ms, what throughput
sees) and its ratio to torch.compile's energy run (LOGS/torch_energy.log, 30 timed steps, when there); the timed steps' energy from ddprun's NVML counters (J per
step, W, power-capped ms per step: metrics_run.energy()) and against torch.compile's (LOGS/torch_energy.log,
torch_extra.py --xl-energy --compile, when there); then the kernel-class lines of LOGS/trace_NAME.txt
(trace_summary.py) for the traced variants. Where LOGS/clocks.csv (device_env.sh's clocks_start) and
LOGS/spans.txt (span) exist, it adds GPU 0's mean SM clock, power and the most frequent clock-event reason
mask over each run's timed steps: the last (timed steps x median ms/step) before the run's end, less 0.3 s
of teardown."""
import collections, datetime, json, statistics, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_run import energy
L, ceil, variants, traced = sys.argv[1], sys.argv[2], sys.argv[3].split(), [v.split(":")[0] for v in sys.argv[4].split()]
tc = None
try:
    for l in open(f"{L}/torch_compile.log"):
        if l.startswith("ANCHOR") and '"variant": "local"' in l: tc = json.loads(l[7:])["iter_ms"]
except OSError: pass
def stamp(t):
    return datetime.datetime.strptime(t.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
samples, ends = [], {}
try:
    for l in open(f"{L}/clocks.csv"):
        f = [x.strip() for x in l.split(",")]
        try: samples.append((stamp(f[0]), float(f[1]), float(f[3]), f[5] if len(f) > 5 else "?"))
        except (ValueError, IndexError): pass
    for l in open(f"{L}/spans.txt"):
        k, what, t = l.split(" ", 2)
        if what == "end": ends[k] = stamp(t)
except OSError: pass
def clocks(key, n, ms):
    """mean SM MHz, mean W and the most frequent reason mask over the timed steps of run `key`, or None"""
    if key not in ends: return None
    hi = ends[key] - 0.3
    lo = hi - n * ms / 1000.0
    w = [x for x in samples if lo <= x[0] <= hi]
    if not w: return None
    return (statistics.mean(x[1] for x in w), statistics.mean(x[2] for x in w),
            collections.Counter(x[3] for x in w).most_common(1)[0][0], len(w))
print(f"dense bf16 ceiling (PyTorch 8192^3, same call): {ceil or 'unknown'} TFLOP/s; torch.compile XL: {tc} ms/step")
tce = None  # torch_extra.py --xl-energy --compile: torch.compile's ms and J per step in the same call
try:
    for l in open(f"{L}/torch_energy.log"):
        if l.startswith("TORCH") and '"xl_energy"' in l: tce = json.loads(l[6:])
except OSError: pass
if tce: print(f"torch.compile XL with energy: {tce['ms_per_step']:.2f} ms/step, {tce['J_per_step']:.2f} J/step, {tce['W']:.0f} W")
print(f"{'variant':16s} {'round':>5s} {'ms/step':>8s} {'fwd':>7s} {'bwd':>7s} {'opt tail':>8s} {'mfu':>7s} {'loss@20':>9s} {'/compile':>8s} {'issue ms':>8s}"
      f" {'wall':>7s} {'/comp-e':>7s} {'J/step':>7s} {'W':>5s} {'capped':>6s} {'J/comp':>6s}"
      + (f" {'SM MHz':>7s} {'W(smi)':>6s} {'reasons':>18s}" if samples else ""))

for v in variants:
    name = v.split(":")[0]
    r = 1
    while os.path.exists(f"{L}/xl_{name}_{r}.jsonl"):
        rows = [json.loads(l) for l in open(f"{L}/xl_{name}_{r}.jsonl") if '"step"' in l]
        t = [x for x in rows if not x.get("warmup")]
        if t:
            g = lambda k: statistics.median(x.get(k, float("nan")) for x in t)
            ms = g("step_ms")
            joules, watts, capped = energy(rows)
            wall = statistics.mean(x.get("host_ms", float("nan")) for x in t)
            print(f"{name:16s} {r:5d} {ms:8.2f} {g('forward_ms'):7.2f} {g('backward_ms'):7.2f} {g('optimizer_ms'):8.2f} "
                  f"{g('mfu'):7.4f} {rows[-1]['loss']:9.5f} {ms / tc if tc else float('nan'):8.3f} {g('issue_ms'):8.3f}"
                  f" {wall:7.2f} {wall / tce['ms_per_step'] if tce else float('nan'):7.3f}"
                  f" {joules:7.2f} {watts:5.0f} {capped:6.1f}"
                  f" {joules / tce['J_per_step'] if tce else float('nan'):6.3f}", end="")
            c = clocks(f"{name}_{r}", len(t), ms) if samples else None
            print(f" {c[0]:7.0f} {c[1]:6.1f} {c[2]:>18s} ({c[3]} samples)" if c else "")
        else: print(f"{name:16s} {r:5d} no timed steps")
        r += 1
for name in traced:
    try:
        lines = open(f"{L}/trace_{name}.txt").read().splitlines()
        print(f"trace {name}:")
        in_classes = False
        for l in lines:
            in_classes = in_classes or l.startswith("class")
            if in_classes or any(k in l for k in ("ADAMW", "REDUCE_ROWS", "RMSNORM_BWD_CAST", "ffn.w13.dW")):
                print("  " + l)
    except OSError: print(f"trace {name}: missing")
