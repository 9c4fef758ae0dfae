#!/usr/bin/env bash
# s26 call 2 (2 x H200): gpu_ddp.sh whole (the moved collectives and "peer_copy" batched by default, one copy
# per peer, captured), then the XL table on 2 GPUs: the moved all-to-alls and "peer_copy", batched and one by one,
# against NCCL's copy-engine path, in the time left
set -u
cd "$(dirname "$0")/.."
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
echo "== gpu_ddp $(date +%T)"
timeout 420 bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$? ok $(grep -cE '^ok' $L/gpu_ddp.log)"
grep -E '^FAIL' $L/gpu_ddp.log | head; grep -E "mv_|pcopy_" $L/gpu_ddp.log | cut -c1-200; tail -2 $L/gpu_ddp.log
echo "== table $(date +%T), $(left) s left"
[ "$(left)" -gt 120 ] && STEPS=30 SINGLE_STEPS=30 ROUNDS=${ROUNDS:-1} SINGLE_GPUS="0 1" TORCH=0 \
  RUNS="ddp100_fp32_ov_a2a_winz_low ddp100_fp32_ov_a2a_mv_low ddp100_fp32_ov_a2a_mv_low_each ddp100_fp32_ov_pcopy_low ddp100_fp32_ov_pcopy_low_each" \
  timeout $(( $(left) - 10 )) bash tests/bench/ddp_table.sh 2>&1 | tail -14
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
