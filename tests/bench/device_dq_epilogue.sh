#!/usr/bin/env bash
# tests/bench/device_dq_epilogue.sh: one GPU, one call (after tests/bench/prepare_device.sh here, and
# tests/bench/prepare_old_bench.sh REV for the code before; carry dev/). The fused attention backward
# writing dQ itself (the last key block to add into a tile stores it; no ATTN_DQ_STORE kernel):
#  - correctness: gpu_kernels --op ATTN_BWD_FUSED (every shape, the counters compared exactly) under
#    SEEDS seeds (default 3), ATTN_BWD_PREP once, compute-sanitizer's memcheck over the quick fused shapes,
#    and the tiny transformer with one head of 64 and fusion.attention_backward on the GPU against the
#    reference executor (10 steps, as gpu_step.sh does);
#  - the leaderboard configuration (B 1, H 16, T 16384, causal, d 64 and 128) by GPU time, ROUNDS rounds
#    (default 4) alternating: ours with the fused backward, the code before it (dev/old: ATTN_BWD_PREP +
#    ATTN_BWD_FUSED + ATTN_DQ_STORE) when built, and SDPA; VARIANTS (default "DDP_DQ_STORE_BATCH=1
#    DDP_DQ_LAG=1 DDP_DQ_LAG=4"): the fused backward again with one of attention_tma.cu's macros set, each in
#    a copy of the templates (the conversion's loads in flight per lane; how many tiles behind the reducing
#    thread waits for its additions to complete).
# The logs in $OUT/logs.tgz; the table last (summary_dq_epilogue.py), also $OUT/table.txt.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
K=dev/bin/ddpbench_kernels
echo "== correctness ($(date +%T))"
for s in $(seq 1 "${SEEDS:-3}"); do
  DDP_SEED=$s timeout 240 dev/bin/gpu_kernels --op ATTN_BWD_FUSED >$L/kern_fused_$s.log 2>&1
  echo "gpu_kernels ATTN_BWD_FUSED seed $s rc=$?: $(tail -1 $L/kern_fused_$s.log)"
  grep -E "^FAIL|^    p" $L/kern_fused_$s.log | head -6
done
timeout 120 dev/bin/gpu_kernels --op ATTN_BWD_PREP >$L/kern_prep.log 2>&1
echo "gpu_kernels ATTN_BWD_PREP rc=$?: $(tail -1 $L/kern_prep.log)"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 dev/bin/gpu_kernels --op ATTN_BWD_FUSED --quick \
  >$L/memcheck_fused.log 2>&1
echo "memcheck gpu_kernels ATTN_BWD_FUSED --quick rc=$?: $(grep -E "ERROR SUMMARY" $L/memcheck_fused.log | tail -1)"
sched=schedules/tiny.lua
set_d64="--set precision=bf16 --set model.heads=1 --set fusion.attention_backward=true"
if $DDPC $sched -o $P/fused_step.bin -q $set_d64; then
  $DDPRUN $P/fused_step.bin --device cuda --steps 10 --metrics $L/fused_step.gpu.jsonl --quiet >$L/fused_step.log 2>&1 &&
    $DDPRUN $P/fused_step.bin --device ref --steps 10 --metrics $L/fused_step.ref.jsonl --quiet >>$L/fused_step.log 2>&1
  echo "tiny d64 fused-backward step rc=$?"
  python3 - $L/fused_step.gpu.jsonl $L/fused_step.ref.jsonl <<'PY'
import json, math, sys
g, r = ([json.loads(l) for l in open(p) if '"step"' in l] for p in sys.argv[1:])
worst = max(abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(g, r))
ok = len(g) == len(r) == 10 and all(math.isfinite(a["loss"]) for a in g) and worst < 2e-2
print(f"{'ok' if ok else 'FAIL'}: tiny d64 fused backward, 10 steps GPU vs reference, max rel loss diff {worst:.2e} (tol 2e-2)")
PY
else
  echo "FAIL: the tiny d64 fused-backward plan does not compile"
fi
mkdir -p /tmp/plan; cp plan/*.h /tmp/plan/ # the templates include ../plan/op_slots.h
VARIANTS=${VARIANTS-DDP_DQ_STORE_BATCH=1 DDP_DQ_LAG=1 DDP_DQ_LAG=4}
v=0
for x in $VARIANTS; do # a copy of the templates per variant, the macro set at the top of attention_tma.cu
  v=$((v + 1)); rm -rf /tmp/tpl_v$v; cp -r templates /tmp/tpl_v$v
  { echo "#define ${x%%=*} ${x#*=}"; cat templates/attention_tma.cu; } >/tmp/tpl_v$v/attention_tma.cu
done
for r in $(seq 1 "${ROUNDS:-4}"); do
  echo "== leaderboard round $r ($(date +%T))"
  timeout 60 $K --only leaderboard --fused >$L/lb_fused_$r.log 2>&1 || echo "ours fused rc=$?"
  if [ -x dev/old/ddpbench_kernels ]; then
    DDP_TEMPLATE_DIR=$R/dev/old/templates timeout 60 dev/old/ddpbench_kernels --only leaderboard --fused \
      >$L/lb_old_$r.log 2>&1 || echo "old fused rc=$?"
  fi
  v=0
  for x in $VARIANTS; do
    v=$((v + 1))
    DDP_TEMPLATE_DIR=/tmp/tpl_v$v timeout 60 $K --only leaderboard --fused >$L/lb_v${v}_$r.log 2>&1 || echo "$x rc=$?"
  done
  for dh in 64 128; do
    timeout 60 python3 $B/torch_extra.py --sdpa-shape 1:16:16384:$dh >$L/lb_sdpa${dh}_$r.log 2>&1 || echo "sdpa d $dh rc=$?"
  done
done
echo "== table ($(date +%T))"
python3 $B/summary_dq_epilogue.py $L "${ROUNDS:-4}" "$VARIANTS" | tee $OUT/table.txt
tar czf $OUT/logs.tgz -C $L .
