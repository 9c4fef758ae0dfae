#!/usr/bin/env python3
"""tests/bench/summary_ceiling.py DIR: device_ceiling.sh's table. The dense bf16 ceiling from DIR's
ceiling_*.log (torch_extra.py --ceiling: the burst of 20 GEMMs, the sustained median after 2 s, its SM clock
and power), the XL step from DIR's xl*.jsonl (ddprun --metrics; the medians of steps 6-30 and, for runs of 100
steps or more, of steps 100-last), and the step's MFU against each ceiling. ddprun's mfu field is against the
datasheet's 989 TFLOP/s when no --peak-tflops is given, so the model FLOPs per step are mfu x 989 TFLOP/s x
the step's time, and MFU against a ceiling C is mfu x 989 / C."""
import glob
import json
import os
import statistics
import sys

DATASHEET = 989.0
d = sys.argv[1]
ceilings = []
for p in sorted(glob.glob(os.path.join(d, "ceiling_*.log"))):
    for l in open(p):
        if l.startswith("TORCH ") and '"ceiling_sustained"' in l:
            j = json.loads(l[6:])
            ceilings.append((os.path.basename(p)[8:-4], j))
print(f"{'ceiling run':12s} {'burst':>7s} {'first 40':>8s} {'sustained':>9s} {'min':>7s} {'SM MHz':>7s} {'W':>6s}")
for name, j in ceilings:
    print(f"{name:12s} {j['burst_TFLOPs']:7.1f} {j['first_window_TFLOPs']:8.1f} {j['TFLOPs']:9.1f} {j['min_TFLOPs']:7.1f} "
          f"{j['sm_MHz']:7.0f} {j['W']:6.0f}")
if not ceilings:
    sys.exit("no ceiling_*.log with a ceiling_sustained line in " + d)
burst = statistics.median(j["burst_TFLOPs"] for _, j in ceilings)
sustained = statistics.median(j["TFLOPs"] for _, j in ceilings)
print(f"median over the runs: burst {burst:.1f}, sustained {sustained:.1f} TFLOP/s ({sustained / burst:.3f} of the burst)")
print(f"{'XL run':12s} {'steps':>9s} {'step ms':>8s} {'TFLOP/s':>8s} {'mfu/burst':>9s} {'mfu/sustained':>13s}")
for p in sorted(glob.glob(os.path.join(d, "xl*.jsonl"))):
    steps = [json.loads(l) for l in open(p) if '"step"' in l]
    if not steps:
        print(f"{os.path.basename(p)}: no steps")
        continue
    last = max(s["step"] for s in steps)
    for a, b in ((6, 30), (100, last)) if last >= 100 else ((6, 30),):
        w = [s for s in steps if a <= s["step"] <= b]
        ms = statistics.median(s["step_ms"] for s in w)
        tflops = statistics.median(s["mfu"] for s in w) * DATASHEET
        print(f"{os.path.basename(p)[:-6]:12s} {f'{a}-{b}':>9s} {ms:8.2f} {tflops:8.1f} {tflops / burst:9.4f} {tflops / sustained:13.4f}")
