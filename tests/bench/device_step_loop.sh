#!/usr/bin/env bash
# tests/bench/device_step_loop.sh: 2 GPUs (nvidia-h200-x2), one call, after tests/bench/prepare_device.sh here
# with an earlier ddprun copied to dev/bin/ddprun_old (carry dev/). The step loop that issues the next step
# before a step's host sum (ddprun) against the one before it (ddprun_old, the host sum between the steps):
# ddp_table.sh's RUNS, one round each, alternating old / new ROUNDS times, STEPS steps; each table gives
# the GPU step and the wall time per step (host_ms) against the one-GPU run of the same binary. Then the
# GPU tests with the new loop: tests/e2e/gpu_ddp.sh on 2 ranks and tests/e2e/gpu_step.sh (time-boxed;
# TESTS=0 skips them).
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}
RUNS=${RUNS:-"ddp100_bf16_ov_a2a_winz_low ddp100_fp32_ov_pcopy_low_tail10 zero1_overlap_a2a_winz"}
for k in $(seq 1 "${ROUNDS:-2}"); do
  for which in old new; do
    bin=$PWD/dev/bin/ddprun; [ $which = old ] && bin=$PWD/dev/bin/ddprun_old
    echo "== $which, round $k ($(date +%T))"
    OUT=$O/${which}$k DDPRUN_BIN=$bin STEPS=${STEPS:-30} ROUNDS=1 TORCH=0 BUSBW=0 BUDGET=0 RUNS="$RUNS" \
      bash tests/bench/device_ddp_overlap.sh 2>&1 | grep -A8 "^plan "
  done
done
. tests/bench/device_env.sh
[ "${TESTS:-1}" = 1 ] || exit 0
echo "== gpu_ddp on 2 ranks ($(date +%T))"
DDP_GPU_RANKS=2 timeout ${DDP_BUDGET:-200} bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$?"
echo "ok: $(grep -cE '^ok' $L/gpu_ddp.log)"; grep -E "^FAIL" $L/gpu_ddp.log | cut -c1-220
echo "== gpu_step ($(date +%T))"
timeout ${STEP_BUDGET:-150} bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"
echo "ok: $(grep -cE '^ok' $L/gpu_step.log)"; grep -E "^FAIL" $L/gpu_step.log | cut -c1-220
tar czf $O/gpu_logs.tgz -C $L gpu_ddp.log gpu_step.log; echo "== done ($(date +%T))"
