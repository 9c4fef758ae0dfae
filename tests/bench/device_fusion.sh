#!/usr/bin/env bash
# tests/bench/device_fusion.sh: one GPU call for the fused kernels (the schedule's `fusion` field), after
# tests/bench/prepare_device.sh here (carry dev/): (1) gpu_kernels on the fused op and the op whose
# template it shares (RMSNORM_BWD_CAST, RMSNORM_BWD: every shape, f32 and bf16, against the reference);
# (2) the XL step (schedules/bench_xl.lua: 48 layers, context 512, batch 4, bf16) with fusion on and off,
# timed alternately, two rounds of 20 steps each (5 warmup), and the two runs' losses, which should be
# equal bit for bit (the fused kernel rounds the same float the CAST would read). Logs: $OUT/fusion.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
step() { echo "== $1 ($(date +%T))"; }
step "kernels"
for op in RMSNORM_BWD_CAST RMSNORM_BWD; do
  timeout 120 dev/bin/gpu_kernels --op $op >$L/gpu_kernels_$op.log 2>&1
  echo "gpu_kernels --op $op rc=$?: $(tail -1 $L/gpu_kernels_$op.log)"
  grep -E "^FAIL" $L/gpu_kernels_$op.log | head -5
done
step "XL bf16 ctx 512 batch 4, fusion on / off alternately"
$DDPC schedules/bench_xl.lua -o $P/xl_on.bin -q || echo "compile (fusion on) failed"
$DDPC schedules/bench_xl.lua -o $P/xl_off.bin -q --set fusion=false || echo "compile (fusion off) failed"
for round in 1 2; do
  for f in on off; do
    timeout 120 $DDPRUN $P/xl_$f.bin --steps 20 --metrics $L/xl_${f}_$round.jsonl --quiet >$L/xl_${f}_$round.log 2>&1 ||
      echo "fusion $f round $round failed: $(tail -1 $L/xl_${f}_$round.log)"
  done
done
tar czf $OUT/fusion.tar.gz -C $L . 2>/dev/null
step "summary"
python3 - $L <<'PY'
import json, statistics, sys
L = sys.argv[1]
def rows(f, r):
    try: return [json.loads(l) for l in open(f"{L}/xl_{f}_{r}.jsonl") if '"step"' in l]
    except OSError: return []
for r in (1, 2):
    for f in ("on", "off"):
        t = [x for x in rows(f, r) if not x.get("warmup")]
        if t: print(f"fusion {f:3s} round {r}: median {statistics.median(x['step_ms'] for x in t):8.2f} ms/step, "
                    f"backward {statistics.median(x['backward_ms'] for x in t):7.2f} ms, last loss {t[-1]['loss']}")
        else: print(f"fusion {f:3s} round {r}: no steps")
a, b = [x["loss"] for x in rows("on", 1)], [x["loss"] for x in rows("off", 1)]
print("losses fused == unfused (20 steps, round 1):", a == b and len(a) > 0, "" if a == b else f"{a[:3]} vs {b[:3]}")
PY
