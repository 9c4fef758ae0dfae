#!/usr/bin/env bash
# tests/bench/device_pdl.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/).
# Programmatic dependent launch (DDP_PDL=1, runtime/cuda/kernels.c; every template kernel begins with
# DDP_GRID_DEPENDENCY): the CUDA executor's tests and gpu_step.sh under it (losses against the reference,
# CUDA graphs bit for bit against eager), the leaderboard attention with the fused backward with and without
# it beside SDPA (GPU time), and the XL step (bench_xl.lua) with and without it, ROUNDS (3) alternating rounds
# of XL_STEPS (30) steps, whose losses must be the same bit for bit (the overlap changes no arithmetic); with
# `prepare_ab.sh before REV` here first, also the revision before the wait (dev/ab/before) in each round;
# SERIAL=1 also the optimizer after the backward (optimizer_overlap = false) without and with; CHECK=0 and
# LB=0 skip the correctness part and the leaderboard.
# Logs in $OUT/logs.tgz; the table last (summary_pdl.py, also $OUT/table.txt).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader | tee $L/gpu.txt
K=dev/bin/ddpbench_kernels
if [ "${CHECK:-1}" = 1 ]; then
echo "== correctness under DDP_PDL=1 ($(date +%T))"
DDP_PDL=1 timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec_pdl.log 2>&1; echo "test_cuda_exec_gpu (PDL) rc=$?: $(tail -1 $L/cuda_exec_pdl.log)"
DDP_PDL=1 timeout 240 bash tests/e2e/gpu_step.sh >$L/gpu_step_pdl.log 2>&1; echo "gpu_step (PDL) rc=$?"
grep -cE "^ok" $L/gpu_step_pdl.log | sed 's/^/ok lines: /'; grep -E "^(FAIL|SKIP)" $L/gpu_step_pdl.log | cut -c1-200
fi
[ "${LB:-1}" = 1 ] && echo "== leaderboard ($(date +%T))"
for r in $([ "${LB:-1}" = 1 ] && echo 1 2 3); do
  timeout 60 $K --only leaderboard --fused >$L/lb_off_$r.log 2>&1 || echo "off $r rc=$?"
  timeout 60 $K --only leaderboard --fused --pdl >$L/lb_on_$r.log 2>&1 || echo "on $r rc=$?"
  timeout 60 python3 $B/torch_extra.py --sdpa-shape 1:16:16384:64 >$L/lb_sdpa_$r.log 2>&1 || echo "sdpa $r rc=$?"
done
echo "== XL ($(date +%T))"
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q
$DDPC schedules/bench_xl.lua -o $P/xl_serial.bin -q --set parallel.optimizer_overlap=false
VS="off on"; [ -x dev/ab/before/ddprun ] && VS="before off on" # prepare_ab.sh before REV: the code before the wait
[ "${SERIAL:-0}" = 1 ] && VS="$VS serial_off serial_on" # the optimizer after the backward, without and with
for r in $(seq 1 "${ROUNDS:-3}"); do
  for v in $VS; do
    pdl=0 run=$DDPRUN plan=$P/xl.bin; [ ${v#serial_} = on ] && pdl=1
    [ $v = before ] && run=dev/ab/before/ddprun plan=dev/ab/before/xl.bin
    [ ${v%_*} = serial ] && plan=$P/xl_serial.bin
    DDP_PDL=$pdl timeout 120 $run $plan --steps "${XL_STEPS:-30}" --metrics $L/xl_${v}_$r.jsonl --quiet \
      >$L/xl_${v}_$r.log 2>&1 || echo "xl $v $r failed: $(tail -1 $L/xl_${v}_$r.log)"
  done
done
tar czf $OUT/logs.tgz -C $L .
echo "== table ($(date +%T))"
python3 $B/summary_pdl.py $L "${ROUNDS:-3}" | tee $OUT/table.txt
