#!/usr/bin/env bash
# tests/bench/device_attention.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/):
# the Hopper attention kernels (templates/attention_wgmma.cu: forward, dK/dV, dQ) against the reference
# executor in each tile variant (gpu_kernels --op) and the mma.sync kernels beside them
# (DDP_TUNE_{FWD,DKV,DQ}_WGMMA=1 or 2); the attention grid of ddpbench_kernels with the defaults and
# with mma.sync everywhere; the leaderboard configuration's tile variants (--tune); PyTorch SDPA on the same
# grid; the whole bf16 step against the reference executor (gpu_step.sh); and the XL step with the defaults
# and with mma.sync, alternating. SEEDS=1 adds the course's grid (batch 8, one head, no mask) for both kernel
# sets and SDPA; TORCH_COMPILE=1 adds torch.compile of the XL step; NCU=1 profiles the leaderboard kernels.
# Logs under $OUT (tarred at the end); a short table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== kernels against the reference ($(date +%T))"
kern fwd ATTN_FWD
kern dkv_wgmma ATTN_BWD_DKV DDP_TUNE_DKV_WGMMA=1
kern dq_wgmma ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=1
kern dq_wgmma_minb2 ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=1 DDP_TUNE_DQ_MINB=2
kern fwd_wgmma ATTN_FWD DDP_TUNE_FWD_WGMMA=1
kern fwd_wgmma_bn128 ATTN_FWD DDP_TUNE_FWD_WGMMA=1 DDP_TUNE_FWD_BN=128
kern fwd_wgmma_w4 ATTN_FWD DDP_TUNE_FWD_WGMMA=1 DDP_TUNE_FWD_WARPS=4
kern fwd_mma ATTN_FWD DDP_TUNE_FWD_WGMMA=2
kern dkv ATTN_BWD_DKV
kern dq ATTN_BWD_DQ
kern dkv_w4 ATTN_BWD_DKV DDP_TUNE_DKV_WGMMA=1 DDP_TUNE_DKV_WARPS=4
kern dq_w4 ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=1 DDP_TUNE_DQ_WARPS=4
kern dkv_mma ATTN_BWD_DKV DDP_TUNE_DKV_WGMMA=2
kern dq_mma ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=2
kern dkv_rope ATTN_BWD_DKV_ROPE
echo "== attention grid ($(date +%T))"
timeout 200 dev/bin/ddpbench_kernels --only attention --quick --naive-max 0 --out $OUT/attn_wgmma.json >$OUT/attn_wgmma.log 2>&1
echo "ddpbench defaults rc=$?"
DDP_TUNE_FWD_WGMMA=2 DDP_TUNE_DKV_WGMMA=2 DDP_TUNE_DQ_WGMMA=2 timeout 200 dev/bin/ddpbench_kernels --only attention --quick --naive-max 0 --out $OUT/attn_mma.json >$OUT/attn_mma.log 2>&1
echo "ddpbench mma.sync rc=$?"
timeout 200 dev/bin/ddpbench_kernels --only none --tune >$OUT/attn_tune.log 2>&1; echo "tune rc=$?"
if [ "${SEEDS:-0}" = 1 ]; then  # the course's grid (batch 8, one head, no mask), both kernel sets and SDPA
  timeout 200 dev/bin/ddpbench_kernels --only seeds --out $OUT/seeds_wgmma.json >$OUT/seeds_wgmma.log 2>&1; echo "seeds defaults rc=$?"
  DDP_TUNE_FWD_WGMMA=2 DDP_TUNE_DKV_WGMMA=2 DDP_TUNE_DQ_WGMMA=2 timeout 200 dev/bin/ddpbench_kernels --only seeds \
    --out $OUT/seeds_mma.json >$OUT/seeds_mma.log 2>&1; echo "seeds mma.sync rc=$?"
  timeout 240 python3 $B/torch_extra.py --seeds >$OUT/torch_seeds.log 2>&1; echo "torch seeds rc=$?"
fi
timeout 200 python3 $B/torch_extra.py --attention --quick >$OUT/torch_sdpa.log 2>&1; echo "torch sdpa rc=$?"
echo "== whole steps against the reference ($(date +%T))"
timeout 240 bash tests/e2e/gpu_step.sh >$OUT/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $OUT/gpu_step.log | head -20
echo "== XL ($(date +%T))"
$DDPC schedules/bench_xl.lua -o $P/wgmma.bin -q
DDP_TUNE_FWD_WGMMA=2 DDP_TUNE_DKV_WGMMA=2 DDP_TUNE_DQ_WGMMA=2 $DDPC schedules/bench_xl.lua -o $P/mma.bin -q
for round in 1 2; do
  for v in wgmma mma; do
    timeout 120 $DDPRUN $P/$v.bin --steps 20 --metrics $OUT/xl_${v}_$round.jsonl --quiet >$OUT/xl_${v}_$round.log 2>&1 ||
      echo "$v failed: $(tail -2 $OUT/xl_${v}_$round.log)"
  done
done
if [ "${TORCH_COMPILE:-0}" = 1 ]; then
  timeout 300 python3 $A --size xl --warmup 3 --iters 10 --compile >$OUT/torch_compile.log 2>&1; echo "torch.compile rc=$?"
fi
$DDPRUN $P/wgmma.bin --steps 3 --trace $OUT/xl_wgmma_trace.json --quiet >/dev/null 2>&1 &&
  python3 $B/trace_summary.py $OUT/xl_wgmma_trace.json >$OUT/xl_wgmma_trace.txt 2>&1
$DDPRUN $P/mma.bin --steps 3 --trace $OUT/xl_mma_trace.json --quiet >/dev/null 2>&1 &&
  python3 $B/trace_summary.py $OUT/xl_mma_trace.json >$OUT/xl_mma_trace.txt 2>&1
rm -f $OUT/xl_*_trace.json
if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then  # where the d 64 kernels stall (leaderboard shape)
  echo "== ncu ($(date +%T))"
  for v in wgmma mma; do
    w=1; [ $v = mma ] && w=2
    DDP_TUNE_FWD_WGMMA=$w DDP_TUNE_DKV_WGMMA=$w DDP_TUNE_DQ_WGMMA=$w timeout 240 ncu -k regex:ddp_attn -c 4 \
      --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
      dev/bin/ddpbench_kernels --only leaderboard >$OUT/ncu_$v.txt 2>&1; echo "ncu $v rc=$?"
  done
fi
python3 $B/summary_attention.py $OUT | tee $OUT/table.txt
tar czf /tmp/session.tar.gz -C $OUT . && find $OUT -mindepth 1 ! -name table.txt -delete && mv /tmp/session.tar.gz $OUT/
