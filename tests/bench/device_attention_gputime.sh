#!/usr/bin/env bash
# tests/bench/device_attention_gputime.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry
# dev/). The attention grid (16 heads, causal, --quick: d 64 / 128, T 1024 / 4096 / 16384) and the seeds' grid
# (batch 8, one head, no mask, d 16-128, T 256-16384), ours with the split and the fused backward and PyTorch
# SDPA, every side by GPU time: ours with ddpbench_kernels --inner 20 (up to 20 runs back to back per timed
# repetition, about 1 ms of work), SDPA with torch_extra.py --gpu-time (its default since; runs queued behind a GPU sleep, each
# backward from no gradients). The grids of earlier sessions timed SDPA by host time, which at short
# sequences is PyTorch's launch and autograd time. Then SDPA and ours at the XL step's shape (B 4, H 25,
# T 512, d 64). The logs in $OUT/logs.tgz (a call brings back a few files only); the table last, also
# $OUT/table.txt (summary_attention.py over the logs, "mma" = the split backward). GRIDS=0 skips the grids and
# the XL shape; LB_ROUNDS=N (default 0) then runs the leaderboard configuration (B 1, H 16, T 16384, causal, d 64
# and 128), ours with each backward and SDPA by GPU time, alternating N times, and prints the rounds' ratios
# (summary_leaderboard.py); LB_GPU_TIME=N also times ours with ddpbench_kernels --gpu-time N in each round
# (N runs back to back behind a GPU spin, three rounds: SDPA's method, which is 50 runs); with dev/old
# (tests/bench/prepare_old_bench.sh REV) each round also times that revision's kernels with the fused
# backward, the same two ways. LB_PDL=1 (with LB_GPU_TIME=N) also times ours with the fused backward under
# --pdl (every kernel launched with programmatic stream serialisation, as ddprun under DDP_PDL=1).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
K=dev/bin/ddpbench_kernels
if [ "${GRIDS:-1}" = 1 ]; then
for v in wgmma mma; do # summary_attention.py's names: "wgmma" the fused backward, "mma" the split one
  f=; [ $v = wgmma ] && f=--fused
  echo "== ours, $v ($(date +%T))"
  timeout 200 $K --only attention --quick --naive-max 0 --inner 20 $f --out $L/attn_$v.json >$L/attn_$v.log 2>&1 ||
    echo "grid $v rc=$?"
  timeout 200 $K --only seeds --inner 20 $f --out $L/seeds_$v.json >$L/seeds_$v.log 2>&1 || echo "seeds $v rc=$?"
done
echo "== SDPA ($(date +%T))"
timeout 200 python3 $B/torch_extra.py --attention --quick --gpu-time >$L/torch_sdpa.log 2>&1; echo "torch sdpa rc=$?"
timeout 240 python3 $B/torch_extra.py --seeds --gpu-time >$L/torch_seeds.log 2>&1; echo "torch seeds rc=$?"
echo "== the XL shape ($(date +%T))"
timeout 100 python3 $B/torch_extra.py --sdpa-shape 4:25:512:64 >$L/sdpa_xl.log 2>&1; echo "sdpa xl rc=$?"
grep -h '"sdpa_shape"' $L/sdpa_xl.log | cut -c1-260
for f in "" --fused; do
  timeout 100 $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --inner 20 --variants defaults $f 2>&1 |
    tee -a $L/xl_shape.log | grep -A1 "tile variants"
done
echo "== table ($(date +%T))"
python3 $B/summary_attention.py $L "split backward" | grep -v "^XL bf16\|^torch.compile" | tee $OUT/table.txt
fi
for r in $(seq 1 "${LB_ROUNDS:-0}"); do
  echo "== leaderboard round $r ($(date +%T))"
  timeout 60 $K --only leaderboard --fused >$L/lb_fused_$r.log 2>&1 || echo "ours fused rc=$?"
  timeout 60 $K --only leaderboard >$L/lb_split_$r.log 2>&1 || echo "ours split rc=$?"
  if [ "${LB_GPU_TIME:-0}" -gt 0 ]; then
    timeout 120 $K --only leaderboard --fused --gpu-time $LB_GPU_TIME >$L/lb_fusedgt_$r.log 2>&1 ||
      echo "ours fused gpu-time rc=$?"
    timeout 120 $K --only leaderboard --gpu-time $LB_GPU_TIME >$L/lb_splitgt_$r.log 2>&1 || echo "ours split gpu-time rc=$?"
    if [ "${LB_PDL:-0}" = 1 ]; then
      timeout 120 $K --only leaderboard --fused --gpu-time $LB_GPU_TIME --pdl >$L/lb_fusedpdl_$r.log 2>&1 ||
        echo "ours fused gpu-time pdl rc=$?"
    fi
  fi
  if [ -x dev/old/ddpbench_kernels ]; then # the kernels of another revision (prepare_old_bench.sh)
    DDP_TEMPLATE_DIR=$R/dev/old/templates timeout 60 dev/old/ddpbench_kernels --only leaderboard --fused \
      >$L/lb_old_$r.log 2>&1 || echo "old fused rc=$?"
    [ "${LB_GPU_TIME:-0}" -gt 0 ] && { DDP_TEMPLATE_DIR=$R/dev/old/templates timeout 120 dev/old/ddpbench_kernels \
      --only leaderboard --fused --gpu-time $LB_GPU_TIME >$L/lb_oldgt_$r.log 2>&1 || echo "old fused gpu-time rc=$?"; }
  fi
  for dh in 64 128; do
    timeout 60 python3 $B/torch_extra.py --sdpa-shape 1:16:16384:$dh >$L/lb_sdpa${dh}_$r.log 2>&1 || echo "sdpa d $dh rc=$?"
  done
done
[ "${LB_ROUNDS:-0}" -gt 0 ] && python3 $B/summary_leaderboard.py $L "$LB_ROUNDS" | tee -a $OUT/table.txt
tar czf $OUT/logs.tgz -C $L .
