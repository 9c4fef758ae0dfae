#!/usr/bin/env bash
# tests/bench/device_gpu1.sh: everything one GPU must show, in one call on the GPU machine (after
# tests/bench/prepare_device.sh here; carry dev/): the GPU tests (kernels vs the reference, whole steps vs
# the reference, the CUDA executor), our XL step and the end-to-end grid, PyTorch eager and
# torch.compile on the same GPU, the kernel benchmarks and PyTorch's. Logs under $OUT; a table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
PLANS=$P
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
. tests/bench/plans.sh
t0=$(date +%s); plans_single; echo "plans compiled on the device in $(( $(date +%s) - t0 )) s"
A=tests/bench/torch_ddp_anchor.py
step() { echo "== $1 ($(date +%T))"; }

step "correctness"
timeout 120 dev/bin/gpu_kernels --quick >$OUT/gpu_kernels.log 2>&1; echo "gpu_kernels rc=$?: $(tail -1 $OUT/gpu_kernels.log)"
timeout 60 dev/bin/test_cuda_exec_gpu >$OUT/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $OUT/cuda_exec.log)"
timeout 150 bash tests/e2e/gpu_step.sh >$OUT/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $OUT/gpu_step.log

step "ours: XL bf16 ctx 512 batch 4"
$DDPRUN $PLANS/xl_bf16_512.bin --metrics $OUT/xl_bf16_512.jsonl >$OUT/xl_bf16_512.log 2>&1; echo "rc=$?"; tail -2 $OUT/xl_bf16_512.log
$DDPRUN $PLANS/xl_bf16_512.bin --steps 7 --trace $OUT/xl_trace.json --quiet >/dev/null 2>&1; echo "trace rc=$?"

step "pytorch eager and torch.compile, XL"
timeout 120 python3 $A --size xl --warmup 3 --iters 10 >$OUT/torch_eager.log 2>&1; echo "eager rc=$?"
timeout 240 python3 $A --size xl --warmup 3 --iters 10 --compile >$OUT/torch_compile.log 2>&1; echo "compile rc=$?"

step "end-to-end grid (ours)"
for p in small_bf16_512 medium_bf16_512 large_bf16_512 2.7b_bf16_512 xl_bf16_128 xl_bf16_256 xl_bf16_1024 xl_bf16_128_b16 xl_fp32_512 xl_bf16_512_naive; do
  timeout 90 $DDPRUN $PLANS/$p.bin --steps 10 --metrics $OUT/grid_$p.jsonl --quiet >$OUT/grid_$p.log 2>&1 || echo "$p failed: $(tail -1 $OUT/grid_$p.log)"
done

step "kernel benchmarks"
timeout 150 dev/bin/ddpbench_kernels --quick --out $OUT/kbench.json >$OUT/kbench.log 2>&1; echo "kbench rc=$?"
timeout 150 python3 $A --skip-ddp --kernels >$OUT/torch_kernels.log 2>&1; echo "torch kernels rc=$?"

step "summary"
python3 - $OUT <<'PY'
import json, glob, os, statistics, sys
out = sys.argv[1]
def ours(path):
    rows = [json.loads(l) for l in open(path) if '"step"' in l]
    t = [r for r in rows if not r["warmup"]] or rows
    g = lambda k: statistics.mean(r[k] for r in t)
    return g("step_ms"), g("forward_ms"), g("backward_ms"), g("optimizer_ms"), g("mfu"), t[-1]["peak_mem_GiB"], len(t)
def anchor(path, variant):
    for l in open(path):
        if l.startswith("ANCHOR") and f'"variant": "{variant}"' in l: return json.loads(l[7:])["iter_ms"]
try: xl = ours(f"{out}/xl_bf16_512.jsonl"); print(f"ours XL bf16: {xl[0]:.2f} ms/step (fwd {xl[1]:.1f}, bwd {xl[2]:.1f}, opt {xl[3]:.1f}), MFU {xl[4]:.3f}, mem {xl[5]:.1f} GiB")
except Exception as e: xl = None; print("ours XL: missing", e)
for name, f in (("eager", "torch_eager.log"), ("torch.compile", "torch_compile.log")):
    try:
        ms = anchor(f"{out}/{f}", "local")
        print(f"pytorch {name}: {ms:.2f} ms/step" + (f"  -> ours/pytorch = {xl[0]/ms:.3f}" if xl else ""))
    except Exception as e: print(f"pytorch {name}: missing ({e})")
print(f"{'plan':22s} {'step ms':>9s} {'fwd':>8s} {'bwd':>8s} {'opt':>7s} {'MFU':>6s} {'GiB':>6s}")
for p in sorted(glob.glob(f"{out}/grid_*.jsonl")):
    try: r = ours(p); print(f"{os.path.basename(p)[5:-6]:22s} {r[0]:9.2f} {r[1]:8.2f} {r[2]:8.2f} {r[3]:7.2f} {r[4]:6.3f} {r[5]:6.1f}")
    except Exception as e: print(p, "bad", e)
PY
grep -iE "leaderboard|rmsnorm.*4096" $OUT/kbench.log | head -6
grep -E "attention|rmsnorm_fwd" $OUT/torch_kernels.log | grep '"H": 4096\|sdpa' | head -3
