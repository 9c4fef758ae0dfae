#!/usr/bin/env bash
# tests/bench/device_optgrid.sh: one GPU: the XL step with the optimizer on a side stream while the AdamW
# kernel's grid is capped (DDP_TUNE_ADAMW_GRID = 16, 32, 48, 64, 132 blocks of 256 threads), against the
# optimizer after the backward; 20 steps each, medians of the 15 after warm-up. Logs under $OUT; a table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
$DDPC schedules/bench_xl.lua -o $P/off.bin -q --set parallel.optimizer_overlap=false
for g in 16 32 48 64 132; do DDP_TUNE_ADAMW_GRID=$g $DDPC schedules/bench_xl.lua -o $P/on_$g.bin -q; done
for v in off on_16 on_32 on_48 on_64 on_132 off on_32 on_48; do
  timeout 120 $DDPRUN $P/$v.bin --steps 20 --metrics $OUT/$v.$RANDOM.jsonl --quiet >$OUT/$v.log 2>&1 || echo "$v failed"
done
python3 - $OUT <<'PY'
import glob, json, statistics, sys, os
rows = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/*.jsonl")):
    r = [json.loads(l) for l in open(f) if '"step"' in l]
    t = [x for x in r if not x["warmup"]]
    v = os.path.basename(f).split(".")[0]
    rows.setdefault(v, []).append((statistics.median(x["step_ms"] for x in t), statistics.median(x["backward_ms"] for x in t),
                                   statistics.median(x["optimizer_ms"] for x in t), r[-1]["loss"]))
print(f"{'plan':8s} {'ms/step':>8s} {'bwd':>7s} {'opt tail':>8s} {'loss@20':>9s}")
for v, rs in rows.items():
    for s in rs: print(f"{v:8s} {s[0]:8.2f} {s[1]:7.2f} {s[2]:8.2f} {s[3]:9.5f}")
PY
