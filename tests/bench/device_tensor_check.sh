#!/usr/bin/env bash
# tests/bench/device_tensor_check.sh: one 2-GPU call that checks the tensor-parallel work on the GPUs (after
# tests/bench/prepare_device.sh here; carry dev/): the vocabulary-parallel kernels (EMBED_FWD/BWD partial,
# XENT_VP_STATS, XENT_VP, and XENT beside them) against the reference executor (gpu_kernels --op), the whole
# one-GPU bf16 step against the reference (gpu_step.sh), the CUDA executor tests, and the 2-GPU suite
# (gpu_ddp.sh: DDP modes, ZeRO, FSDP, pipelines and tensor parallelism against one GPU). Logs under $OUT;
# a line per part last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
: >$OUT/summary.txt
part() { # NAME COMMAND...: its output in $OUT/NAME.log, a line in the summary
  local name=$1 s=$(date +%s); shift
  "$@" >$OUT/$name.log 2>&1
  echo "$name: rc=$? in $(($(date +%s) - s)) s: $(grep -E '^FAIL|[0-9]+/[0-9]+|passed|ok' $OUT/$name.log | tail -1)" |
    tee -a $OUT/summary.txt
}
for op in EMBED_FWD EMBED_BWD XENT XENT_VP_STATS XENT_VP; do part "kern_$op" timeout 120 dev/bin/gpu_kernels --op $op; done
part cuda_exec timeout 60 dev/bin/test_cuda_exec_gpu
part gpu_step timeout 150 bash tests/e2e/gpu_step.sh
part gpu_ddp timeout 300 bash tests/e2e/gpu_ddp.sh
grep -h "^FAIL" $OUT/*.log | head -20
echo "== summary"; cat $OUT/summary.txt
