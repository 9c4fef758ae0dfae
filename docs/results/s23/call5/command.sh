#!/usr/bin/env bash
# the checks of this tree (gpu_kernels --quick and the attention ops on every shape, test_cuda_exec_gpu,
# gpu_step.sh), then attention at short sequences and d 128 by GPU time: new defaults against the choice before
# (after prepare_device.sh and prepare_ab.sh a_base 892043e b_new 4e3ff6c)
set -u
. tests/bench/device_env.sh
K=dev/bin/ddpbench_kernels
AB_PARTS=check AB_KERNELS="ATTN_FWD ATTN_BWD_DKV ATTN_BWD_DQ ATTN_BWD_FUSED ATTN_BWD_DKV_ROPE ATTN_BWD_DQ_ROPE" bash tests/bench/device_ab.sh 2>&1 | grep -vE '^(what|torch)' | head -60
cp /tmp/out/ab.tar.gz $OUT/check.tar.gz 2>/dev/null
echo "== shapes $(date +%T)"
for sh in 4:25:128 4:25:256 4:25:512 16:25:1024; do
  timeout 100 $K --only none --tune --tune-shape $sh --tune-d 64 --gpu-time 50 --variants "defaults;DDP_TUNE_ATTN_PERSISTENT=2" >>$OUT/shapes.log 2>&1; echo "$sh rc=$?"
done
for sh in 4:25:512 4:16:2048; do
  timeout 100 $K --only none --tune --tune-shape $sh --tune-d 128 --gpu-time 50 --variants "defaults;DDP_TUNE_ATTN_PERSISTENT=2;DDP_TUNE_ATTN_PERSISTENT=1" >>$OUT/shapes.log 2>&1; echo "$sh d128 rc=$?"
done
grep -E '^  |tile variants' $OUT/shapes.log
