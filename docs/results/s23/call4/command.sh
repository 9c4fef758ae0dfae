#!/usr/bin/env bash
# 16-byte accumulator stores (quad shuffles) in every Hopper attention kernel, persistent TMA kernels:
# checks against the reference, then the XL shape and the leaderboard by GPU time
set -u
. tests/bench/device_env.sh
K=dev/bin/ddpbench_kernels
echo "== checks $(date +%T)"
kern fwd ATTN_FWD
kern fwd_tma_c2_cap3 ATTN_FWD DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2 DDP_PERSISTENT_BLOCKS=3
kern fwd_tma_d ATTN_FWD DDP_TUNE_FWD_WGMMA=4
kern fwd_mma ATTN_FWD DDP_TUNE_FWD_WGMMA=2
kern dkv ATTN_BWD_DKV
kern dkv_cpa ATTN_BWD_DKV DDP_TUNE_DKV_WGMMA=3
kern dq ATTN_BWD_DQ
kern dq_tma_cap3 ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=4 DDP_PERSISTENT_BLOCKS=3
kern fused ATTN_BWD_FUSED
kern fused_halves ATTN_BWD_FUSED DDP_TUNE_FUSED_SPLIT=1
echo "== XL shape $(date +%T)"
V="defaults;DDP_TUNE_ATTN_PERSISTENT=2;DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2;DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2 DDP_TUNE_DQ_CONSUMERS=2;DDP_TUNE_DQ_WGMMA=4"
for r in 1 2; do
  timeout 150 $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --gpu-time 50 --variants "$V" >>$OUT/xl_shape.log 2>&1; echo "xl split rc=$?"
  timeout 100 $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --gpu-time 50 --fused --variants "defaults" >>$OUT/xl_shape.log 2>&1; echo "xl fused rc=$?"
  timeout 100 python3 tests/bench/torch_extra.py --sdpa-shape 4:25:512:64 2>&1 | tee -a $OUT/xl_sdpa.log | grep '"sdpa_shape"' | cut -c100-200
done
grep -E '^  |tile variants' $OUT/xl_shape.log
echo "== leaderboard $(date +%T)"
for r in 1 2; do
for d in 64 128; do
  timeout 200 $K --only none --tune --tune-d $d --gpu-time 50 --variants "defaults;DDP_TUNE_ATTN_PERSISTENT=2" >>$OUT/lb.log 2>&1; echo "lb d$d rc=$?"
  timeout 200 $K --only none --tune --tune-d $d --gpu-time 50 --fused --variants "defaults" >>$OUT/lb.log 2>&1; echo "lb fused d$d rc=$?"
done
done
grep -E '^  |tile variants' $OUT/lb.log
timeout 100 python3 tests/bench/torch_extra.py --sdpa-shape 1:16:16384:64 2>&1 | tee -a $OUT/lb_sdpa.log | grep '"sdpa_shape"' | cut -c100-200
tar czf $OUT/logs.tgz -C $L .
