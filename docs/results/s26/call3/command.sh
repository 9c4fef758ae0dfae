#!/usr/bin/env bash
# s26 call 3 (NPROC x H200): the moved collectives' pulls batched on a side stream, the own chunk copied beside
# them (29e.. working tree), against one copy per peer and NCCL's copy-engine path; the tiny model's checks first
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee $OUT/run.log) 2>&1
date
NR=$NPROC timeout 150 bash dev/tiny.sh 2>&1 | tail -12
NPROC=$NPROC STEPS=30 SINGLE_STEPS=30 ROUNDS=2 TORCH=0 RUNS="ddp100_fp32_ov_a2a_winz_low ddp100_fp32_ov_a2a_mv_low ddp100_fp32_ov_a2a_mv_low_each" bash tests/bench/ddp_table.sh | tail -8
date
