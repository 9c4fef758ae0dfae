#!/usr/bin/env bash
# tests/bench/device_window.sh: 2 GPUs (nvidia-h200-x2), one call, after tests/bench/prepare_device.sh here
# (carry dev/). NCCL symmetric windows (nccl = { register = "window" }) against issue 17's interference:
# `ddprun --bench interference` (100 MiB beside the XL GEMM mix) per collective (all-reduce, reduce-scatter,
# all-gather) on a cudaMalloc'd buffer, on a symmetric window, and on a window with the zero-CTA policy;
# then ddp_table.sh's RUNS (default: ZeRO-1 with the update in the backward and bucketed DDP, fp32
# gradients, each plain and on windows; ZeRO-1 bf16 on windows with the zero policy), ROUNDS rounds; then
# tests/e2e/gpu_ddp.sh in the time left (BUDGET seconds for the whole script, default 570). GDDP_FIRST=1
# runs gpu_ddp.sh first (GDDP_LIMIT seconds) and skips the interference benchmark (INTERFERENCE=0). COLLS
# picks the benchmark's collectives (default "allreduce reducescatter allgather"; also alltoall).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
gddp() { # LIMIT
  timeout $1 bash tests/e2e/gpu_ddp.sh >$OUT/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$?"
  grep -cE "^ok" $OUT/gpu_ddp.log; grep -E "^FAIL|window" $OUT/gpu_ddp.log | cut -c1-260
}
[ "${GDDP_FIRST:-0}" = 1 ] && { echo "== gpu_ddp ($(date +%T))"; gddp ${GDDP_LIMIT:-200}; }
[ "${INTERFERENCE:-1}" = 1 ] && echo "== interference ($(date +%T))"
for c in $([ "${INTERFERENCE:-1}" = 1 ] && echo ${COLLS:-allreduce reducescatter allgather}); do
  timeout 120 $DDPRUN --bench interference --nproc 2 --mb 100 --coll $c --paths default,window,window_zero \
    --out $OUT/interference.jsonl 2>&1 | tail -4
done
echo "== table ($(date +%T))"
RUNS=${RUNS:-"zero1_overlap zero1_overlap_win zero1_overlap_winz ddp_fp32 ddp_fp32_win zero1_overlap_bf16_winz"} \
  ROUNDS=${ROUNDS:-2} TORCH=${TORCH:-0} bash tests/bench/ddp_table.sh 2>&1 | tail -12
left=$(( ${BUDGET:-570} - SECONDS ))
echo "== gpu_ddp, ${left} s left ($(date +%T))"
[ $left -gt 30 ] && [ "${GDDP_FIRST:-0}" != 1 ] && gddp $left
