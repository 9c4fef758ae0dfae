#!/usr/bin/env bash
# s28 call 1 (one H200): the GPU tests after the last session's review refactors (base/bytes.h under
# plan.bin's reader and writer and the kernel cache's trailer; ddp_path_folder) and this session's first
# changes: gpu_kernels --quick, test_cuda_exec_gpu, gpu_step.sh; then the XL step (bench_xl.lua, 30 steps,
# two rounds) and torch.compile's 30-step energy run in the same call. After prepare_device.sh; carry dev/.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader
echo "== GPU tests $(date +%T)"
timeout 150 dev/bin/gpu_kernels --quick >$L/gpu_kernels.log 2>&1; echo "gpu_kernels --quick rc=$?: $(tail -1 $L/gpu_kernels.log)"
grep -E "^FAIL" $L/gpu_kernels.log | head -5
timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $L/cuda_exec.log)"
timeout 220 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -cE "^ok" $L/gpu_step.log; grep -E "^FAIL" $L/gpu_step.log
echo "== XL $(date +%T)"
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q || echo "xl does not compile"
for r in 1 2; do
  timeout 120 $DDPRUN $P/xl.bin --steps 30 --metrics $L/xl.r$r.jsonl >$L/xl.r$r.log 2>&1; echo "xl r$r rc=$?: $(tail -1 $L/xl.r$r.log)"
done
echo "== torch.compile energy $(date +%T)"
timeout 300 python3 $B/torch_extra.py --xl-energy --compile >$L/torch_energy.log 2>&1; echo "torch energy rc=$?"
grep -h '"xl_energy"' $L/torch_energy.log
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
