#!/usr/bin/env bash
# tests/bench/device_fusion.sh: one GPU call for the fused kernels (the schedule's `fusion` field), after
# tests/bench/prepare_device.sh here (carry dev/): (1) gpu_kernels on the fused ops (every shape) and, in
# --quick, on the ops whose templates they share (RMSNORM_BWD, ATTN_BWD_DKV, ATTN_BWD_DQ), against the
# reference, and tests/e2e/gpu_step.sh (its bf16 plans are fused by default); (2) the XL step (schedules/bench_xl.lua: 48 layers, context 512, batch 4, bf16) with fusion on,
# off, and norm_cast only (fusion = { rope = false }), timed alternately, two rounds of 20 steps each (5
# warmup). norm_cast only must give the unfused losses bit for bit (the fused kernel rounds the float the
# CAST would read); with rope the GPU rounds dq / dk once instead of twice, so its losses differ from the
# unfused ones in the last digits only. Logs: $OUT/fusion.tar.gz. FUSION_PARTS="kernels step bench" (the
# default) picks the parts, so that each call fits the time limit (e.g. FUSION_PARTS=kernels, then "step bench").
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
step() { echo "== $1 ($(date +%T))"; }
PARTS=${FUSION_PARTS:-kernels step bench}
if [[ " $PARTS " == *" kernels "* ]]; then
step "kernels"
for op in RMSNORM_BWD_CAST ATTN_BWD_DKV_ROPE ATTN_BWD_DQ_ROPE RMSNORM_BWD ATTN_BWD_DKV ATTN_BWD_DQ; do
  case $op in *_CAST|*_ROPE) q= ;; *) q=--quick ;; esac
  timeout 150 dev/bin/gpu_kernels --op $op $q >$L/gpu_kernels_$op.log 2>&1
  echo "gpu_kernels --op $op $q rc=$?: $(tail -1 $L/gpu_kernels_$op.log)"
  grep -E "^FAIL" $L/gpu_kernels_$op.log | head -5
done
fi
if [[ " $PARTS " == *" step "* ]]; then
step "whole steps, GPU against the reference executor (fused by default: tiny bf16, FSDP bf16)"
timeout 200 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $L/gpu_step.log
fi
if [[ " $PARTS " == *" bench "* ]]; then
step "XL bf16 ctx 512 batch 4: fusion on / off / norm_cast only, alternately"
$DDPC schedules/bench_xl.lua -o $P/xl_on.bin -q --set fusion=true || echo "compile (fusion on) failed"
$DDPC schedules/bench_xl.lua -o $P/xl_off.bin -q --set fusion=false || echo "compile (fusion off) failed"
sed 's/steps = 20, warmup = 5, seed = 1,/steps = 20, warmup = 5, seed = 1, fusion = { rope = false },/' schedules/bench_xl.lua \
  >$P/xl_norm.lua && cp schedules/lib/models.lua $P/ 2>/dev/null
grep -q "rope = false" $P/xl_norm.lua || echo "schedules/bench_xl.lua changed: the norm_cast-only copy is not one"
$DDPC $P/xl_norm.lua -o $P/xl_norm.bin -q || echo "compile (norm_cast only) failed"
for round in 1 2; do
  for f in on off norm; do
    timeout 120 $DDPRUN $P/xl_$f.bin --steps 20 --metrics $L/xl_${f}_$round.jsonl --quiet >$L/xl_${f}_$round.log 2>&1 ||
      echo "fusion $f round $round failed: $(tail -1 $L/xl_${f}_$round.log)"
  done
done
fi
tar czf $OUT/fusion.tar.gz -C $L . 2>/dev/null
step "summary"
python3 - $L <<'PY'
import json, statistics, sys
L = sys.argv[1]
def rows(f, r):
    try: return [json.loads(l) for l in open(f"{L}/xl_{f}_{r}.jsonl") if '"step"' in l]
    except OSError: return []
for r in (1, 2):
    for f in ("on", "off", "norm"):
        t = [x for x in rows(f, r) if not x.get("warmup")]
        if t: print(f"fusion {f:4s} round {r}: median {statistics.median(x['step_ms'] for x in t):8.2f} ms/step, "
                    f"backward {statistics.median(x['backward_ms'] for x in t):7.2f} ms, last loss {t[-1]['loss']}")
        else: print(f"fusion {f:4s} round {r}: no steps")
on, off, norm = ([x["loss"] for x in rows(f, 1)] for f in ("on", "off", "norm"))
print("norm_cast only == unfused, bit for bit (20 losses):", norm == off and len(off) == 20)
if on and off and len(on) == len(off):
    print("fused (rope too) vs unfused: largest |loss difference| %.3g" % max(abs(a - b) for a, b in zip(on, off)))
PY
