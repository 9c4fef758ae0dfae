#!/usr/bin/env bash
# s24 call 6 (one H200): both forwards on fwd_tile / fwd_store (wgmma.cuh) against HEAD's copies: the forward
# on every shape (defaults; the TMA forward at every T with the blocks capped at 3), then the forward's time
# by GPU time at T 256 (the cp.async kernel), 512, 16384 (TMA), alternating with HEAD's, two rounds.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((170 - ($(date +%s) - T0))); }
kern fwd ATTN_FWD
kern fwd_tma_cap3 ATTN_FWD DDP_PERSISTENT_BLOCKS=3 DDP_TUNE_FWD_WGMMA=4
for r in 1 2; do
  for sh in 4:25:256:64 4:25:512:64 1:16:16384:64 1:16:16384:128; do
    [ "$(left)" -lt 25 ] && { echo "skipped $sh r$r"; continue; }
    IFS=: read b h t dh <<<"$sh"
    echo "new r$r $sh $(timeout 40 dev/bin/ddpbench_kernels --only none --tune --tune-shape $b:$h:$t --tune-d $dh --gpu-time 50 --variants defaults 2>&1 | grep -E '^  ')"
    echo "old r$r $sh $(DDP_TEMPLATE_DIR=$R/dev/old/templates timeout 40 dev/old/ddpbench_kernels --only none --tune --tune-shape $b:$h:$t --tune-d $dh --gpu-time 50 --variants defaults 2>&1 | grep -E '^  ')"
  done
done
echo "== end $(date +%T)"
