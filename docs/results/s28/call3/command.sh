#!/usr/bin/env bash
# s28 call 3 (one H200): after the last runtime changes of the session (grad_norm and loss_rank0 null where
# not computed, the pipeline memory planner's shared tensors): test_cuda_exec_gpu and gpu_step.sh. After
# prepare_device.sh here; carry dev/.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $L/cuda_exec.log)"
timeout 220 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -cE "^ok" $L/gpu_step.log; grep -E "^FAIL" $L/gpu_step.log
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
