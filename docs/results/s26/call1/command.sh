#!/usr/bin/env bash
# s26 call 1 (nvidia-h200-x4): the moved collectives' copies batched (DDP_PEER_COPY_API) against one copy per peer and NCCL's copy-engine path
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee $OUT/run.log) 2>&1
date; nvidia-smi topo -m > $OUT/topo.txt 2>&1
timeout 150 bash dev/tiny4.sh 2>&1 | tail -20
NPROC=4 STEPS=30 SINGLE_STEPS=30 ROUNDS=2 TORCH=0 RUNS="ddp100_fp32_ov_a2a_winz_low ddp100_fp32_ov_a2a_mv_low ddp100_fp32_ov_a2a_mv_low_api1 ddp100_fp32_ov_a2a_mv_low_api2 zero1_overlap_a2a_winz zero1_overlap_a2a_mv_api1" bash tests/bench/ddp_table.sh
date
