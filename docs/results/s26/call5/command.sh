#!/usr/bin/env bash
# s26 call 5 (4 x H200): the moved collectives' pulls reading the peers' NCCL windows (register = "window",
# window_peer.c): the control on equal allocations; the tiny model's checks first
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee $OUT/run.log) 2>&1
date
NR=4 timeout 170 bash dev/tiny.sh 2>&1 | tail -14
NPROC=4 STEPS=30 SINGLE_STEPS=30 ROUNDS=2 TORCH=0 RUNS="ddp100_fp32_ov_a2a_winz_low ddp100_fp32_ov_a2a_mv_low ddp100_fp32_ov_a2a_mv_win_low" bash tests/bench/ddp_table.sh | tail -8
date
