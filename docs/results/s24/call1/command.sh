#!/usr/bin/env bash
# s24 call 1 (one H200): the TMA dQ on dq_tile (a branch per tile) against 923553e's (a predicate per element):
# its checks on every shape (defaults, the persistent ctest's configuration, one block per tile), both dQ's
# times by GPU time in alternating rounds; then the GPU tests (gpu_kernels --quick, test_cuda_exec_gpu,
# gpu_step.sh). After prepare_device.sh and prepare_old_bench.sh 923553e here; carry dev/.
set -u
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "== dQ checks $(date +%T)"
kern dq ATTN_BWD_DQ
kern persistent ATTN_FWD,ATTN_BWD_DKV,ATTN_BWD_DQ DDP_PERSISTENT_BLOCKS=3 DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4
kern dq_tile_blocks ATTN_BWD_DQ DDP_TUNE_ATTN_PERSISTENT=2
kern dq_rope ATTN_BWD_DQ_ROPE
echo "== dQ times $(date +%T)"
K=dev/bin/ddpbench_kernels
for r in 1 2; do
  for sh in 4:25:512:64 16:25:1024:64 4:25:512:128 1:16:16384:64 1:16:16384:128; do
    IFS=: read b h t dh <<<"$sh"
    timeout 100 $K --only none --tune --tune-shape $b:$h:$t --tune-d $dh --gpu-time 50 >>$L/times_new.log 2>&1 || echo "new $sh rc=$?"
    DDP_TEMPLATE_DIR=$R/dev/old/templates timeout 100 dev/old/ddpbench_kernels --only none --tune --tune-shape $b:$h:$t \
      --tune-d $dh --gpu-time 50 >>$L/times_old.log 2>&1 || echo "old $sh rc=$?"
  done
done
for v in new old; do echo "-- $v"; grep -E '^tile variants|^  ' $L/times_$v.log | sed 's/tile variants, bf16 causal, //'; done
echo "== GPU tests $(date +%T)"
timeout 150 dev/bin/gpu_kernels --quick >$L/gpu_kernels.log 2>&1; echo "gpu_kernels --quick rc=$?: $(tail -1 $L/gpu_kernels.log)"
timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $L/cuda_exec.log)"
timeout 200 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -cE "^ok" $L/gpu_step.log; grep -E "^FAIL" $L/gpu_step.log
cp $OUT/kern_*.log $L/ 2>/dev/null; rm -f $OUT/kern_*.log
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
