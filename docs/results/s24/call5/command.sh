#!/usr/bin/env bash
# s24 call 5 (2 x H200): the 2-GPU table (the one-GPU step on each GPU, bucketed DDP bf16 and fp32, ZeRO-1,
# PyTorch DDP; two rounds), then the 2-GPU equivalence suite (gpu_ddp.sh) in the time left.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((555 - ($(date +%s) - T0))); }
STEPS=30 SINGLE_STEPS=30 ROUNDS=2 SINGLE_GPUS="0 1" TORCH=1 \
  RUNS="ddp100_bf16_ov_a2a_winz_low ddp100_fp32_ov_pcopy_low_tail10 zero1_overlap_a2a_winz" \
  timeout 330 bash tests/bench/ddp_table.sh 2>&1 | tail -25
cp $OUT/*.tar.gz $L/ 2>/dev/null
echo "== gpu_ddp $(date +%T), $(left) s left"
[ "$(left)" -gt 60 ] && { timeout $(( $(left) - 15 )) bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$? ok $(grep -cE '^ok' $L/gpu_ddp.log)"; grep -E '^FAIL' $L/gpu_ddp.log | head; tail -2 $L/gpu_ddp.log; }
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
