#!/usr/bin/env bash
# tests/bench/device_gpu4.sh: the 4-GPU runs (nvidia-h200-x4, after tests/bench/prepare_device.sh; carry
# dev/): ToyModel and tiny-transformer equivalence on 4 GPUs (tests/e2e/gpu_ddp.sh with DDP_GPU_RANKS=4), the
# all-reduce benchmark at 4 ranks, XL bucketed 100 MB and ZeRO-1 at 4 ranks (batch 4 per rank), PyTorch's
# DDP and all-reduce at 4 ranks in the same call. Logs in $OUT/gpu4.tar.gz; tables printed.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee $L/gpu.txt
echo "== equivalence on 4 GPUs ($(date +%T))"
DDP_GPU_RANKS=4 timeout 120 bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp4.log 2>&1; echo "gpu_ddp (4 ranks) rc=$?"; grep -E "^(ok|FAIL|Naive)" $L/gpu_ddp4.log
echo "== all-reduce, 4 ranks ($(date +%T))"
timeout 90 $DDPRUN --bench allreduce --nproc 4 --out $L/ar_ddpc_4.jsonl 2>&1 | tail -12
echo "== XL at 4 ranks ($(date +%T))"
for s in bucketed_100mb zero1; do
  $DDPC schedules/$s.lua -o $P/x4_$s.bin -q --set parallel.ranks=4 --set data.global_batch=16 &&
    timeout 60 $DDPRUN $P/x4_$s.bin --nproc 4 --steps 14 --metrics $L/ddp_x4_$s.jsonl --quiet >$L/ddp_x4_$s.log 2>&1 || echo "$s failed: $(tail -1 $L/ddp_x4_$s.log)"
done
python3 $B/summary_ddp.py $L | sed 's/^/ours /'
echo "== PyTorch at 4 ranks ($(date +%T))"
timeout 150 torchrun --nproc_per_node=4 $B/torch_ddp_anchor.py --size xl --warmup 2 --iters 4 >$L/torch_ddp4.log 2>&1; echo "torch rc=$?"
grep ANCHOR $L/torch_ddp4.log | cut -c1-200
tar czf $OUT/gpu4.tar.gz -C $L . ; echo "== done ($(date +%T))"
