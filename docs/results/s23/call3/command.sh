#!/usr/bin/env bash
# ncu with per-instruction stall sampling: the persistent TMA forward (2 consumers), the cp.async forward and
# the persistent dK/dV at the XL shape (before the 16-byte stores)
set -u
. tests/bench/device_env.sh
K=dev/bin/ddpbench_kernels
NCU="ncu --clock-control none --set full --import-source no"
prof() { # NAME REGEX VARIANT
  timeout 150 $NCU --kernel-name regex:"$2" --launch-skip 4 --launch-count 1 -o $L/$1 -f \
    $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --variants "$3" --inner 1 >$L/$1.run.log 2>&1
  echo "$1 rc=$?"
  ncu --import $L/$1.ncu-rep --page details >$L/$1.txt 2>&1
  ncu --import $L/$1.ncu-rep --page source --csv --print-source sass >$L/$1.sass.csv 2>$L/$1.sass.err; echo "source page rc=$? $(wc -l <$L/$1.sass.csv) lines"
  head -c 600 $L/$1.sass.err
  grep -E 'Duration|Registers Per|Grid Size|Warp Cycles Per Issued|Achieved Occupancy' $L/$1.txt
}
prof fwd_tma2 '^ddp_attn_fwd$' "DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2"
prof fwd_cpa '^ddp_attn_fwd$' "defaults"
prof dkv_p '^ddp_attn_bwd_dkv$' "defaults"
head -3 $L/fwd_tma2.sass.csv | cut -c1-1500
tar czf $OUT/logs.tgz -C $L .
