#!/usr/bin/env bash
# s27 call 3 (2 x H200): gpu_ddp.sh whole on the session's binaries: the data-parallel, ZeRO, FSDP, tensor and
# pipeline plans against one GPU, the moved collectives (batched pulls since a2beee2, not run on a GPU
# before), and the launch and failure part (with this session's dispatch: output and checkpoint-folder
# checks before the ranks start, the GPU probe shared with --bench, signals coalesced within a second).
# After copying build/ddpc, ddprun into dev/bin here.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "== gpu_ddp $(date +%T)"
timeout 560 bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$?"
grep -cE "^ok" $L/gpu_ddp.log; grep -E "^FAIL|^SKIP" $L/gpu_ddp.log | head -20; tail -3 $L/gpu_ddp.log
gzip -c $L/gpu_ddp.log >$OUT/gpu_ddp.log.gz
echo "== end $(date +%T)"
