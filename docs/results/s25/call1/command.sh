#!/usr/bin/env bash
# s25 call 1 (one H200): dK/dV on dkv_tile (wgmma.cuh, b95a3f6) against bd3a51c's copies: the checks of
# both dK/dV kernels (TMA by default; cp.async with DDP_TUNE_DKV_WGMMA=3; one block per tile; the persistent
# ctest's three blocks), their times by GPU time alternating with bd3a51c's (two rounds), then the XL step
# of both revisions alternating (device_ab.sh: two rounds of 30 steps) and torch.compile's 30-step energy run.
# After prepare_device.sh, prepare_old_bench.sh bd3a51c and prepare_ab.sh a_base bd3a51c b_new b95a3f6 here.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "== dK/dV checks $(date +%T)"
kern dkv ATTN_BWD_DKV
kern dkv_cp ATTN_BWD_DKV DDP_TUNE_DKV_WGMMA=3
kern dkv_tile_blocks ATTN_BWD_DKV DDP_TUNE_ATTN_PERSISTENT=2
kern dkv_persistent3 ATTN_BWD_DKV DDP_PERSISTENT_BLOCKS=3
echo "== dK/dV times $(date +%T), $(left) s left"
K=dev/bin/ddpbench_kernels
for r in 1 2; do
  for sh in 4:25:512:64 1:16:16384:64 1:16:16384:128 cp:1:16:16384:64; do
    e=(); s=$sh; [ "${sh%%:*}" = cp ] && { e=(DDP_TUNE_DKV_WGMMA=3); s=${sh#cp:}; }
    [ "$(left)" -lt 260 ] && { echo "times: skipped $sh r$r ($(left) s left)"; continue; }
    IFS=: read b h t dh <<<"$s"
    echo "new r$r $sh $(env "${e[@]}" timeout 40 $K --only none --tune --tune-shape $b:$h:$t --tune-d $dh --gpu-time 50 --variants defaults 2>&1 | grep -E '^  ')"
    echo "old r$r $sh $(env "${e[@]}" DDP_TEMPLATE_DIR=$R/dev/old/templates timeout 40 dev/old/ddpbench_kernels --only none --tune --tune-shape $b:$h:$t --tune-d $dh --gpu-time 50 --variants defaults 2>&1 | grep -E '^  ')"
  done
done
echo "== XL a/b and torch.compile $(date +%T), $(left) s left"
cp $OUT/kern_*.log $L/ 2>/dev/null
AB_PARTS=bench AB_ROUNDS=2 AB_STEPS=30 AB_TORCH=energy timeout $(( $(left) - 5 )) bash tests/bench/device_ab.sh
echo "== end $(date +%T)"
