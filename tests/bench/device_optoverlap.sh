#!/usr/bin/env bash
# tests/bench/device_optoverlap.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/):
# the GPU tests (kernels, the CUDA executor, whole steps against the reference executor), then the XL step
# (bf16, context 512, batch 4) with the optimizer on a side stream during the backward (the default for one
# rank) against the same plan with `single { optimizer_overlap = false }`, alternating, 20 steps each (5
# warm-up), and torch.compile of the same model in the same call. Logs under $OUT; a table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== correctness ($(date +%T))"
timeout 120 dev/bin/gpu_kernels --quick >$OUT/gpu_kernels.log 2>&1; echo "gpu_kernels rc=$?: $(tail -1 $OUT/gpu_kernels.log)"
timeout 60 dev/bin/test_cuda_exec_gpu >$OUT/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $OUT/cuda_exec.log)"
timeout 240 bash tests/e2e/gpu_step.sh >$OUT/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $OUT/gpu_step.log
echo "== XL ($(date +%T))"
$DDPC schedules/bench_xl.lua -o $P/on.bin -q
$DDPC schedules/bench_xl.lua -o $P/off.bin -q --set parallel.optimizer_overlap=false
for round in 1 2; do
  for v in on off; do
    timeout 120 $DDPRUN $P/$v.bin --steps 20 --metrics $OUT/xl_${v}_$round.jsonl --quiet >$OUT/xl_${v}_$round.log 2>&1 ||
      echo "$v failed: $(tail -2 $OUT/xl_${v}_$round.log)"
  done
done
timeout 300 python3 $A --size xl --warmup 3 --iters 10 --compile >$OUT/torch_compile.log 2>&1; echo "torch.compile rc=$?"
python3 - $OUT <<'PY'
import json, statistics, sys
out = sys.argv[1]
def ours(f):
    rows = [json.loads(l) for l in open(f) if '"step"' in l]
    t = [r for r in rows if not r["warmup"]]
    g = lambda k: statistics.median(r[k] for r in t)
    return g("step_ms"), g("forward_ms"), g("backward_ms"), g("optimizer_ms"), rows[-1]["loss"]
tc = None
for l in open(f"{out}/torch_compile.log"):
    if l.startswith("ANCHOR") and '"variant": "local"' in l: tc = json.loads(l[7:])["iter_ms"]
print(f"{'XL bf16, 1 GPU':28s} {'ms/step':>8s} {'fwd':>7s} {'bwd':>7s} {'opt tail':>8s} {'loss@20':>9s} {'/compile':>8s}")
for r in (1, 2):
    for v, name in (("on", "optimizer overlapped"), ("off", "optimizer after backward")):
        try:
            s = ours(f"{out}/xl_{v}_{r}.jsonl")
            print(f"{name + ' r' + str(r):28s} {s[0]:8.2f} {s[1]:7.2f} {s[2]:7.2f} {s[3]:8.2f} {s[4]:9.5f} {s[0]/tc if tc else float('nan'):8.3f}")
        except Exception as e: print(name, "missing", e)
print("torch.compile ms/step:", tc)
PY
