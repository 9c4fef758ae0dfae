#!/usr/bin/env bash
# s24 call 3 (one H200): the leaderboard (B 1, H 16, T 16384, causal, bf16) by SDPA's method, ours split and
# fused (ddpbench_kernels --gpu-time 50) and SDPA (torch_extra.py --sdpa-shape), two rounds; then the
# calibration and explain --compare (device_calibrate.sh), then the ceiling and the XL step's MFU
# (device_ceiling.sh, CEIL_S=8, XL_LONG=100), each while the call's time allows. Output to $OUT/run.log.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
K=dev/bin/ddpbench_kernels
echo "== leaderboard $(date +%T)"
for r in 1 2; do
  timeout 90 $K --only leaderboard --gpu-time 50 >$L/lb_split_$r.log 2>&1 || echo "split rc=$?"
  timeout 90 $K --only leaderboard --fused --gpu-time 50 >$L/lb_fused_$r.log 2>&1 || echo "fused rc=$?"
  for dh in 64 128; do
    timeout 60 python3 $B/torch_extra.py --sdpa-shape 1:16:16384:$dh >$L/lb_sdpa${dh}_$r.log 2>&1 || echo "sdpa d $dh rc=$?"
  done
done
python3 $B/summary_leaderboard.py $L 2 2>&1 | tail -20
echo "== calibration $(date +%T), $(left) s left"
[ "$(left)" -gt 330 ] && OUT=$OUT/cal timeout 280 bash $B/device_calibrate.sh 2>&1 | tail -30
echo "== ceiling $(date +%T), $(left) s left"
[ "$(left)" -gt 120 ] && CEIL_S=8 XL_LONG=100 timeout $(( $(left) - 10 )) bash $B/device_ceiling.sh 2>&1 | tail -20
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
