#!/usr/bin/env bash
# tests/bench/device_ab.sh: one GPU call that checks a refactor (after prepare_device.sh and
# prepare_ab.sh here; carry dev/): the GPU tests of this tree (every kernel against the reference in
# --quick, the CUDA executor, whole steps against the reference executor), then the XL step of each
# revision in dev/ab/*/ timed alternately (two rounds of 20 steps each), then PyTorch eager and
# torch.compile on the same GPU; a table last. Logs go to $OUT/ab.tar.gz. AB_PARTS="check bench" (the
# default) picks the parts, so each fits one call's time limit: the timings and PyTorch stay in one call.
# AB_KERNELS="OP ..." also checks those ops on every shape (gpu_kernels --op, not --quick); AB_ROUNDS (2)
# and AB_STEPS (20) shape the timing; AB_TORCH=energy runs torch.compile's 30-step energy run
# (torch_extra.py --xl-energy --compile) instead of the anchor's eager and compiled runs.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
step() { echo "== $1 ($(date +%T))"; }
PARTS=${AB_PARTS:-check bench}
if [[ " $PARTS " == *" check "* ]]; then
step "correctness (this tree)"
timeout 150 dev/bin/gpu_kernels --quick >$L/gpu_kernels.log 2>&1; echo "gpu_kernels --quick rc=$?: $(tail -1 $L/gpu_kernels.log)"
for op in ${AB_KERNELS:-}; do kern "${op,,}" $op; done
timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $L/cuda_exec.log)"
timeout 200 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $L/gpu_step.log
fi
if [[ " $PARTS " == *" bench "* ]]; then
step "XL bf16 ctx 512 batch 4, revisions alternately"
for round in $(seq 1 "${AB_ROUNDS:-2}"); do
  for d in dev/ab/*/; do
    n=$(basename $d)
    timeout 120 $d/ddprun $d/xl.bin --steps "${AB_STEPS:-20}" --metrics $L/ab_${n}_$round.jsonl --quiet >$L/ab_${n}_$round.log 2>&1 \
      || echo "$n round $round failed: $(tail -1 $L/ab_${n}_$round.log)"
  done
done
step "pytorch XL (same GPU, same call)"
if [ "${AB_TORCH:-anchor}" = energy ]; then
  timeout 300 python3 $B/torch_extra.py --xl-energy --compile >$L/torch_energy.log 2>&1; echo "torch energy rc=$?"
  grep -h '"xl_energy"' $L/torch_energy.log | cut -c1-300
else
  timeout 150 python3 $A --size xl --warmup 3 --iters 10 >$L/torch_eager.log 2>&1; echo "eager rc=$?"
  timeout 300 python3 $A --size xl --warmup 3 --iters 10 --compile >$L/torch_compile.log 2>&1; echo "compile rc=$?"
fi
fi
tar czf $OUT/ab.tar.gz -C $L . 2>/dev/null
step "summary"
python3 - $L <<'PY'
import json, glob, os, statistics, sys
L = sys.argv[1]
def step_ms(path):
    rows = [json.loads(l) for l in open(path) if '"step"' in l]
    t = [r for r in rows if not r.get("warmup")] or rows
    return statistics.median(r["step_ms"] for r in t), t[-1].get("peak_mem_GiB", float("nan")), rows[-1].get("loss")
def anchor(path):
    try:
        for l in open(path):
            if l.startswith("ANCHOR") and '"iter_ms"' in l: return json.loads(l[7:])["iter_ms"]
    except OSError: pass
    return float("nan")
sys.path.insert(0, "tests/bench")
from attn_log import torch_record
comp = anchor(f"{L}/torch_compile.log"); eager = anchor(f"{L}/torch_eager.log")
if os.path.exists(f"{L}/torch_energy.log"): # torch_extra.py --xl-energy --compile: its ms per step
    comp = (torch_record(f"{L}/torch_energy.log", "xl_energy") or {"ms_per_step": float("nan")})["ms_per_step"]
print(f"{'what':34s} {'ms/step (median)':>16s} {'peak GiB':>9s} {'last loss':>10s} {'/ torch.compile':>15s}")
for f in sorted(glob.glob(f"{L}/ab_*.jsonl")):
    try: ms, mem, loss = step_ms(f)
    except Exception as e: print(f"{os.path.basename(f):34s} unreadable: {e}"); continue
    print(f"{os.path.basename(f)[3:-6]:34s} {ms:16.2f} {mem:9.2f} {loss:10.4f} {ms/comp:15.3f}")
print(f"{'torch eager':34s} {eager:16.2f}"); print(f"{'torch.compile':34s} {comp:16.2f}")
PY
