#!/usr/bin/env bash
# tests/bench/device_tma.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/): the
# warp-specialised TMA attention kernels (templates/attention_tma.cu) against the reference executor in their
# tile variants and beside the cp.async wgmma kernels (DDP_TUNE_*_WGMMA=3); the leaderboard configuration's
# tile variants (ddpbench_kernels --tune, head dims 64 and 128); PyTorch SDPA in the same call; the whole bf16
# step against the reference executor (gpu_step.sh); the XL step with each kernel set, alternating, two rounds.
# SEEDS=1 adds the course's grid (both kernel sets and SDPA), TORCH_COMPILE=1 torch.compile's XL step.
# Logs under $OUT (tarred at the end); a short table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== kernels against the reference ($(date +%T))"
kern fwd ATTN_FWD
kern fwd_tma ATTN_FWD DDP_TUNE_FWD_WGMMA=4
kern fwd_tma_c2_nb2 ATTN_FWD DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2 DDP_TUNE_FWD_NBUF=2
kern fwd_tma_bn64 ATTN_FWD DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_FWD_BN=64
kern dkv ATTN_BWD_DKV
kern dq ATTN_BWD_DQ
kern dq_tma ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=4
kern dq_tma_c2 ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=4 DDP_TUNE_DQ_CONSUMERS=2
kern dq_tma_bn128 ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=4 DDP_TUNE_DQ_BN=128 DDP_TUNE_DQ_CONSUMERS=2
kern dkv_bn128 ATTN_BWD_DKV DDP_TUNE_DKV_BN=128
kern fwd_cpasync ATTN_FWD DDP_TUNE_FWD_WGMMA=3
kern dkv_cpasync ATTN_BWD_DKV DDP_TUNE_DKV_WGMMA=3
kern dq_cpasync ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=3
kern dkv_rope ATTN_BWD_DKV_ROPE
timeout 120 dev/bin/test_cuda_exec_gpu >$OUT/cuda_exec_gpu.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $OUT/cuda_exec_gpu.log)"
echo "== leaderboard tile variants ($(date +%T))"
timeout 240 dev/bin/ddpbench_kernels --only none --tune --out $OUT/tune.json >$OUT/attn_tune.log 2>&1; echo "tune rc=$?"
timeout 200 python3 $B/torch_extra.py --attention --quick >$OUT/torch_sdpa.log 2>&1; echo "torch sdpa rc=$?"
if [ "${SEEDS:-0}" = 1 ]; then  # the course's grid (batch 8, one head, no mask): TMA, cp.async wgmma, SDPA
  timeout 200 dev/bin/ddpbench_kernels --only seeds --out $OUT/seeds_wgmma.json >$OUT/seeds_wgmma.log 2>&1; echo "seeds TMA rc=$?"
  DDP_TUNE_FWD_WGMMA=3 DDP_TUNE_DKV_WGMMA=3 DDP_TUNE_DQ_WGMMA=3 timeout 200 dev/bin/ddpbench_kernels --only seeds \
    --out $OUT/seeds_mma.json >$OUT/seeds_mma.log 2>&1; echo "seeds cp.async rc=$?"
  timeout 240 python3 $B/torch_extra.py --seeds >$OUT/torch_seeds.log 2>&1; echo "torch seeds rc=$?"
fi
echo "== attention grid ($(date +%T))"
timeout 200 dev/bin/ddpbench_kernels --only attention --quick --naive-max 0 --out $OUT/attn_wgmma.json >$OUT/attn_wgmma.log 2>&1
echo "ddpbench defaults rc=$?"
DDP_TUNE_FWD_WGMMA=3 DDP_TUNE_DKV_WGMMA=3 DDP_TUNE_DQ_WGMMA=3 timeout 200 dev/bin/ddpbench_kernels --only attention --quick \
  --naive-max 0 --out $OUT/attn_mma.json >$OUT/attn_mma.log 2>&1
echo "ddpbench cp.async rc=$?"
echo "== whole steps against the reference ($(date +%T))"
timeout 240 bash tests/e2e/gpu_step.sh >$OUT/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $OUT/gpu_step.log | head -20
echo "== XL ($(date +%T))"
# the dense bf16 ceiling measured here (PyTorch 8192^3), so that the XL runs' mfu is against it
ceiling $OUT/torch_kernels.log
$DDPC schedules/bench_xl.lua -o $P/wgmma.bin -q
DDP_TUNE_FWD_WGMMA=3 DDP_TUNE_DKV_WGMMA=3 DDP_TUNE_DQ_WGMMA=3 $DDPC schedules/bench_xl.lua -o $P/mma.bin -q
for round in 1 2; do
  for v in wgmma mma; do
    timeout 120 $DDPRUN $P/$v.bin --steps 20 $PEAK --metrics $OUT/xl_${v}_$round.jsonl --quiet >$OUT/xl_${v}_$round.log 2>&1 ||
      echo "$v failed: $(tail -2 $OUT/xl_${v}_$round.log)"
  done
done
# T 512 with the TMA forward and dQ forced (the compiler keeps them on cp.async below T 1024)
DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4 $DDPC schedules/bench_xl.lua -o $P/tma.bin -q
timeout 120 $DDPRUN $P/tma.bin --steps 20 --metrics $OUT/xl_tma.jsonl --quiet >$OUT/xl_tma.log 2>&1 || echo "forced TMA failed"
for v in wgmma mma tma; do
  $DDPRUN $P/$v.bin --steps 3 --trace $OUT/xl_${v}_trace.json --quiet >/dev/null 2>&1 &&
    python3 $B/trace_summary.py $OUT/xl_${v}_trace.json >$OUT/xl_${v}_trace.txt 2>&1
  rm -f $OUT/xl_${v}_trace.json
done
if [ "${TORCH_COMPILE:-0}" = 1 ]; then
  timeout 300 python3 $A --size xl --warmup 3 --iters 10 --compile >$OUT/torch_compile.log 2>&1; echo "torch.compile rc=$?"
fi
echo "== table ($(date +%T))"
{
  grep -E "^  |tile variants" $OUT/attn_tune.log
  grep -E '"T": 16384' $OUT/torch_sdpa.log | grep bf16
  python3 $B/summary_attention.py $OUT "cp.async wgmma"
  python3 - $OUT/xl_tma.jsonl <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"step"' in l]
t = [r for r in rows if not r.get("warmup")]
if t: print(f"XL, TMA forward and dQ forced (DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4): {statistics.median(r['step_ms'] for r in t):.2f} ms, loss {rows[-1]['loss']}")
PY
  echo "dense bf16 ceiling (PyTorch 8192^3, same call): ${CEIL:-unknown} TFLOP/s"
  for f in $OUT/xl_wgmma_1.jsonl $OUT/xl_wgmma_2.jsonl $OUT/xl_mma_1.jsonl; do
    python3 - $f <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"step"' in l]
t = [r for r in rows if not r.get("warmup")]
if t: print(f"{sys.argv[1].split('/')[-1]}: mfu of the measured ceiling {statistics.median(r['mfu'] for r in t):.4f}")
PY
  done
  for v in wgmma mma tma; do echo "trace $v:"; grep -iE "attn|attention|class|total" $OUT/xl_${v}_trace.txt | head -12; done
} >$OUT/table.txt 2>&1
# "defaults" = the compiler's choice (TMA dK/dV; TMA forward and dQ from T 1024), "cp.async wgmma" =
# DDP_TUNE_{FWD,DKV,DQ}_WGMMA=3 (the kernels before this change)
cat $OUT/table.txt
tar czf /tmp/session.tar.gz -C $OUT . && find $OUT -mindepth 1 ! -name table.txt -delete && mv /tmp/session.tar.gz $OUT/
