#!/usr/bin/env bash
# tests/bench/device_gpu2.sh: what two GPUs must show, in one call (after tests/bench/prepare_device.sh
# here; carry dev/): the DDP tests (equivalence, launches, failures), our 1-rank XL step on this machine,
# the XL DDP family (naive, flat, individual, bucketed 1/10/100/1000 MB, bf16 gradients, optimizer overlap,
# sharded optimizer, ZeRO-1) with communication, exposure and overlap, bucketed 100 MB under fewer NCCL
# channels, a 2-rank --trace, and PyTorch DDP in the same call. Logs in $OUT/ddp.tar.gz; tables printed.
# (The all-reduce benchmark: `ddprun --bench allreduce --nproc 2`, recorded separately.)
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
PLANS=$P
T0=$(date +%s); guard() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
. $B/plans.sh; plans_ddp; $DDPC schedules/bench_xl.lua -o $PLANS/single.bin -q --set warmup=5
echo "== DDP tests ($(date +%T))"
timeout 160 bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$?"; grep -E "^(ok|FAIL|Naive)" $L/gpu_ddp.log
echo "== XL: one rank, then DDP on two ($(date +%T))"
CUDA_VISIBLE_DEVICES=0 $DDPRUN $PLANS/single.bin --steps 14 --metrics $L/ddp_single_rank.jsonl --quiet >$L/single.log 2>&1 || tail -2 $L/single.log
ddp() { for p in "$@"; do
  guard 420 || { echo "out of time before $p"; return; }
  timeout 45 $DDPRUN $PLANS/ddp_$p.bin --nproc 2 --steps 14 --metrics $L/ddp_$p.jsonl --quiet >$L/ddp_$p.log 2>&1 || echo "$p failed: $(tail -1 $L/ddp_$p.log)"
done; }
ddp bucketed_100mb bucketed_10mb bucketed_1mb bucketed_1000mb bucketed_10mb_bf16grad bucketed_10mb_optoverlap individual flat naive zero1 sharded_optimizer
for n in 4 8; do
  guard 440 || break
  NCCL_MAX_NCHANNELS=$n timeout 45 $DDPRUN $PLANS/ddp_bucketed_100mb.bin --nproc 2 --steps 14 --metrics $L/ddp_bucketed_100mb_nchannels$n.jsonl --quiet >/dev/null 2>&1 || echo "nchannels $n failed"
done
echo "== 2-rank trace ($(date +%T))"
timeout 45 $DDPRUN $PLANS/ddp_bucketed_100mb.bin --nproc 2 --steps 4 --trace $L/trace_ddp.json --quiet >$L/trace.log 2>&1; echo "trace rc=$?"; ls $L/trace_ddp*.json
python3 $B/trace_summary.py $L/trace_ddp.rank0.json --top 6
echo "== pytorch DDP ($(date +%T))"
guard 450 && { timeout 110 torchrun --nproc_per_node=2 $A --size xl --warmup 2 --iters 4 >$L/torch_ddp.log 2>&1; echo "torch rc=$?"; }
tar czf $OUT/ddp.tar.gz -C $L . && ls -la $OUT
python3 $B/summary_ddp.py $L
echo "== done ($(date +%T))"
