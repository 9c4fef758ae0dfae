#!/usr/bin/env bash
# tests/bench/device_sharding_1gpu.sh: the ZeRO levels on ONE GPU, in one call on the GPU machine (after
# tests/bench/prepare_device.sh here; carry dev/). One GPU cannot show communication overlap (NCCL with one
# rank copies), but it runs every instruction of the sharded plans for real:
#  - correctness: gpu_kernels --quick, test_cuda_exec_gpu, gpu_step.sh (which runs zero1, zero2 and fsdp
#    plans with one rank on the GPU against the reference executor, and resumes across executors);
#  - the XL step (bf16, context 512, batch 4) with ranks = 1 for DDP (bucketed 10 MB), zero1, zero2 and
#    fsdp (prefetch 1 and 2, reshard on and off, fp32 gathers): ms/step, and the planner's bytes against
#    the measured peak (cudaMemGetInfo peak minus the memory in use before the arenas).
# Logs under $OUT; a table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
step() { echo "== $1 ($(date +%T))"; }

step "correctness"
timeout 120 dev/bin/gpu_kernels --quick >$OUT/gpu_kernels.log 2>&1; echo "gpu_kernels rc=$?: $(tail -1 $OUT/gpu_kernels.log)"
timeout 60 dev/bin/test_cuda_exec_gpu >$OUT/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $OUT/cuda_exec.log)"
timeout 240 bash tests/e2e/gpu_step.sh >$OUT/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $OUT/gpu_step.log

step "XL, one rank, each level"
one=(--set parallel.ranks=1 --set data.global_batch=4)
c() { $DDPC "$@" -q || echo "compile failed: $*"; }
c schedules/bucketed_10mb.lua -o $P/ddp.bin "${one[@]}"
c schedules/zero1.lua -o $P/zero1.bin "${one[@]}"
c schedules/zero2.lua -o $P/zero2.bin "${one[@]}"
c schedules/fsdp.lua -o $P/fsdp.bin "${one[@]}"
c schedules/fsdp.lua -o $P/fsdp_p2.bin "${one[@]}" --set parallel.prefetch=2
c schedules/fsdp.lua -o $P/fsdp_keep.bin "${one[@]}" --set parallel.reshard_after_forward=false
c schedules/fsdp.lua -o $P/fsdp_g32.bin "${one[@]}" --set parallel.gather_dtype=fp32
for p in ddp zero1 zero2 fsdp fsdp_p2 fsdp_keep fsdp_g32; do
  timeout 150 $DDPRUN $P/$p.bin --steps 20 --metrics $OUT/xl1_$p.jsonl --quiet >$OUT/xl1_$p.log 2>&1 ||
    echo "$p failed: $(tail -2 $OUT/xl1_$p.log)"
done

step "summary"
python3 - $OUT <<'PY'
import json, statistics, sys
out = sys.argv[1]
print(f"{'XL, 1 GPU':12s} {'ms/step':>8s} {'fwd':>7s} {'bwd':>7s} {'opt':>7s} {'planned GiB':>11s} {'measured':>9s} {'meas/plan':>9s} {'loss@20':>9s}")
for p in ("ddp", "zero1", "zero2", "fsdp", "fsdp_p2", "fsdp_keep", "fsdp_g32"):
    try:
        lines = [json.loads(l) for l in open(f"{out}/xl1_{p}.jsonl")]
        steps = [r for r in lines if "step" in r]
        mem = next(r for r in lines if r.get("event") == "memory")
        t = [r for r in steps if not r["warmup"]] or steps
        g = lambda k: statistics.median(r[k] for r in t)
        meas = max(r["peak_mem_GiB"] for r in steps) - mem["mem_base_GiB"]
        plan = mem["plan_total_GiB"]
        print(f"{p:12s} {g('step_ms'):8.2f} {g('forward_ms'):7.2f} {g('backward_ms'):7.2f} {g('optimizer_ms'):7.2f} "
              f"{plan:11.2f} {meas:9.2f} {meas / plan:9.3f} {steps[-1]['loss']:9.4f}")
    except Exception as e:
        print(f"{p:12s} missing ({e})")
PY
