#!/usr/bin/env bash
# s24 call 2 (one H200): the TMA dQ on dq_tile against 923553e's, by GPU time (--variants defaults: the
# default kernels only), alternating, two rounds; then the GPU tests of this tree. Output goes to $OUT/run.log
# as it happens; a part that would not fit in the call is skipped.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((540 - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
K=dev/bin/ddpbench_kernels
echo "== dQ times $(date +%T)"
for r in 1 2; do
  for sh in 4:25:512:64 1:16:16384:64 1:16:16384:128; do
    IFS=: read b h t dh <<<"$sh"
    [ "$(left)" -lt 300 ] && { echo "times: skipped $sh round $r ($(left) s left)"; continue; }
    timeout 60 $K --only none --tune --tune-shape $b:$h:$t --tune-d $dh --gpu-time 50 --variants defaults >$L/new_${sh//:/_}_$r.log 2>&1 || echo "new $sh rc=$?"
    echo "new r$r $sh $(grep -E '^  ' $L/new_${sh//:/_}_$r.log)"
    DDP_TEMPLATE_DIR=$R/dev/old/templates timeout 60 dev/old/ddpbench_kernels --only none --tune --tune-shape $b:$h:$t \
      --tune-d $dh --gpu-time 50 --variants defaults >$L/old_${sh//:/_}_$r.log 2>&1 || echo "old $sh rc=$?"
    echo "old r$r $sh $(grep -E '^  ' $L/old_${sh//:/_}_$r.log)"
  done
done
echo "== GPU tests $(date +%T), $(left) s left"
timeout 150 dev/bin/gpu_kernels --quick >$L/gpu_kernels.log 2>&1; echo "gpu_kernels --quick rc=$?: $(tail -1 $L/gpu_kernels.log)"
timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $L/cuda_exec.log)"
if [ "$(left)" -gt 100 ]; then
  timeout $(( $(left) - 10 )) bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?, ok $(grep -cE '^ok' $L/gpu_step.log)"; grep -E "^FAIL" $L/gpu_step.log
else echo "gpu_step: skipped ($(left) s left)"; fi
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
