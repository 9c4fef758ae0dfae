#!/usr/bin/env bash
# s27 call 4 (2 x H200): after the review's fixes (the metrics file opened once the run goes ahead, the stop
# handler's atomics, the token fd's flags, the executors' messages): gpu_step.sh on GPU 0, then gpu_ddp.sh
# whole (the launch and failure part included). After copying build/ddpc, ddprun into dev/bin here.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "== gpu_step $(date +%T)"
CUDA_VISIBLE_DEVICES=0 timeout 200 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"
grep -cE "^ok" $L/gpu_step.log; grep -E "^FAIL" $L/gpu_step.log
echo "== gpu_ddp $(date +%T)"
timeout 380 bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$?"
grep -cE "^ok" $L/gpu_ddp.log; grep -E "^FAIL|^SKIP" $L/gpu_ddp.log | head -20; tail -2 $L/gpu_ddp.log
gzip -c $L/gpu_ddp.log >$OUT/gpu_ddp.log.gz; gzip -c $L/gpu_step.log >$OUT/gpu_step.log.gz
echo "== end $(date +%T)"
