#!/usr/bin/env bash
# tests/bench/device_side_sms2.sh: 2 GPUs (nvidia-h200-x2), one call, after tests/bench/prepare_device.sh
# here (carry dev/). Issue 17's interference with the collectives in an SM partition of their own:
# `ddprun --bench interference` (100 MiB fp32 all-reduces beside the XL GEMM mix) with the communication
# stream on all SMs and on 16 / 24 SMs of a green context (the GEMMs sized for the rest), twice each, and
# the GEMMs sized for 116 SMs alone; then ddp_table.sh's RUNS (default: ZeRO-1 with the update in the
# backward and bucketed DDP, fp32 gradients, each without and with the partition). Logs and tables in $OUT.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
echo "== interference ($(date +%T))"
for s in ${SIDES:-0 16 24}; do
  for r in 1 2; do
    timeout 120 $DDPRUN --bench interference --nproc 2 --mb 100 --paths default --side-sms $s --out $OUT/interference.jsonl \
      2>&1 | tail -2
  done
done
timeout 120 $DDPRUN --bench interference --nproc 2 --mb 100 --paths default --gemm-sms 116 --out $OUT/interference.jsonl 2>&1 | tail -1
echo "== table ($(date +%T))"
RUNS=${RUNS:-"zero1_overlap zero1_overlap_side16 zero1_overlap_side24 zero1_overlap_side16_t0 ddp_fp32 ddp_fp32_side16"} \
  ROUNDS=${ROUNDS:-1} TORCH=${TORCH:-0} bash tests/bench/ddp_table.sh 2>&1 | tail -14
