#!/usr/bin/env bash
# persistent TMA attention (before the 16-byte stores): kernel checks against the reference (blocks capped so
# each walks many tiles), memcheck, then the XL attention shape and the leaderboard under variants, by GPU time
set -u
. tests/bench/device_env.sh
K=dev/bin/ddpbench_kernels
echo "== checks $(date +%T)"
kern fwd_tma_cap3 ATTN_FWD DDP_TUNE_FWD_WGMMA=4 DDP_PERSISTENT_BLOCKS=3
kern fwd_tma_c2_cap2 ATTN_FWD DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2 DDP_PERSISTENT_BLOCKS=2
kern fwd_tma_bn64_cap1 ATTN_FWD DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_BN=64 DDP_PERSISTENT_BLOCKS=1
kern fwd_tma_onetile ATTN_FWD DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_ATTN_PERSISTENT=2
kern fwd ATTN_FWD
kern dkv ATTN_BWD_DKV
kern dkv_cap3 ATTN_BWD_DKV DDP_PERSISTENT_BLOCKS=3
kern dkv_bn128_cap2 ATTN_BWD_DKV DDP_TUNE_DKV_BN=128 DDP_PERSISTENT_BLOCKS=2
kern dq_tma_cap3 ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=4 DDP_PERSISTENT_BLOCKS=3
kern dq_tma_c2_cap1 ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=4 DDP_TUNE_DQ_CONSUMERS=2 DDP_PERSISTENT_BLOCKS=1
kern fused ATTN_BWD_FUSED
echo "== memcheck $(date +%T)"
DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4 DDP_PERSISTENT_BLOCKS=3 timeout 200 compute-sanitizer --tool memcheck dev/bin/gpu_kernels --quick --op ATTN_BWD_DKV >$L/memcheck_dkv.log 2>&1; echo "memcheck dkv rc=$?: $(grep -E 'ERROR SUMMARY' $L/memcheck_dkv.log)"
DDP_TUNE_FWD_WGMMA=4 DDP_PERSISTENT_BLOCKS=3 timeout 200 compute-sanitizer --tool synccheck dev/bin/gpu_kernels --quick --op ATTN_FWD >$L/synccheck_fwd.log 2>&1; echo "synccheck fwd rc=$?: $(grep -E 'ERROR SUMMARY' $L/synccheck_fwd.log)"
echo "== XL shape $(date +%T)"
V="DDP_TUNE_ATTN_PERSISTENT=2;defaults;DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4;DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2 DDP_TUNE_DQ_CONSUMERS=2;DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2 DDP_TUNE_FWD_BN=64 DDP_TUNE_DQ_WGMMA=4 DDP_TUNE_DQ_CONSUMERS=2 DDP_TUNE_ATTN_PERSISTENT=2"
for r in 1 2; do
  timeout 150 $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --gpu-time 50 --variants "$V" >>$OUT/xl_shape.log 2>&1; echo "xl split rc=$?"
  timeout 100 $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --gpu-time 50 --fused --variants "DDP_TUNE_ATTN_PERSISTENT=2;defaults" >>$OUT/xl_shape.log 2>&1; echo "xl fused rc=$?"
  timeout 100 python3 tests/bench/torch_extra.py --sdpa-shape 4:25:512:64 2>&1 | tee -a $OUT/xl_sdpa.log | grep '"sdpa_shape"' | cut -c1-200
done
grep -E '^  |tile variants' $OUT/xl_shape.log
echo "== leaderboard $(date +%T)"
for d in 64 128; do
  timeout 200 $K --only none --tune --tune-d $d --gpu-time 50 --variants "DDP_TUNE_ATTN_PERSISTENT=2;defaults;DDP_TUNE_FWD_CONSUMERS=2" >>$OUT/lb.log 2>&1; echo "lb d$d rc=$?"
done
grep -E '^  |tile variants' $OUT/lb.log
tar czf $OUT/logs.tgz -C $L .
