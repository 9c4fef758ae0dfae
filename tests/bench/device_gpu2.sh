#!/usr/bin/env bash
# tests/bench/device_gpu2.sh: what two GPUs must show, in one call (carry dev/): the DDP tests (equivalence,
# launches, failures), the NCCL all-reduce benchmark (ours and PyTorch's in the same call), the XL DDP
# family's step times with communication, exposure and overlap, and PyTorch DDP. A table last.
set -u
cd "$(dirname "$0")/../.."
R=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export DDPC=$R/dev/bin/ddpc DDPRUN=$R/dev/bin/ddprun ST_COMPARE=$R/dev/bin/st_compare DDP_SOURCE_DIR=$R
export DDPC_CACHE_DIR=$R/dev/cache DDP_TEMPLATE_DIR=$R/templates DDP_TEST_TMP=/tmp/ddpt
PLANS=/tmp/plans; mkdir -p $PLANS $DDP_TEST_TMP
. tests/bench/plans.sh; plans_ddp
A=tests/bench/torch_ddp_anchor.py
echo "== all-reduce ($(date +%T))"
timeout 60 $DDPRUN --bench allreduce --nproc 2 --out $OUT/ar_ddpc.jsonl
echo "== DDP tests ($(date +%T))"
timeout 150 bash tests/gpu_ddp.sh >$OUT/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$?"; grep -E "^(ok|FAIL|Naive)" $OUT/gpu_ddp.log
echo "== XL DDP ($(date +%T))"
ddp() { for p in "$@"; do
  timeout 40 $DDPRUN $PLANS/ddp_$p.bin --nproc 2 --steps 9 --metrics $OUT/ddp_$p.jsonl --quiet >$OUT/ddp_$p.log 2>&1 || echo "$p failed: $(tail -1 $OUT/ddp_$p.log)"
done; }
ddp bucketed_100mb flat individual bucketed_10mb naive
echo "== pytorch ($(date +%T))"
timeout 100 torchrun --nproc_per_node=2 $A --size xl --warmup 2 --iters 4 >$OUT/torch_ddp.log 2>&1; echo "torch rc=$?"
echo "== more XL DDP ($(date +%T))"
ddp zero1 sharded_optimizer bucketed_10mb_bf16grad bucketed_10mb_optoverlap bucketed_1mb bucketed_1000mb
python3 tests/bench/summary_ddp.py $OUT
