#!/usr/bin/env bash
# tests/bench/device_gemm.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/): the
# XL step's 15 GEMM shapes as our traced step runs them, against the dense bf16 ceiling (PyTorch's 8192^3
# GEMM) and PyTorch's `a @ b` of the same shapes, all in this call (summary_gemm.py). Logs under $OUT
# (tarred); the table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 180 python3 $A --skip-ddp --kernels >$OUT/torch_kernels.log 2>&1; echo "torch kernels rc=$?"
timeout 120 python3 $B/torch_extra.py --gemm >$OUT/torch_gemm.log 2>&1; echo "torch gemm rc=$?"
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q
timeout 120 $DDPRUN $P/xl.bin --steps 3 --trace $OUT/xl_trace.json --quiet >$OUT/xl_trace.log 2>&1; echo "trace rc=$?"
python3 $B/trace_summary.py $OUT/xl_trace.json --top 60 >$OUT/xl_trace.txt 2>&1; rm -f $OUT/xl_trace.json
python3 $B/summary_gemm.py $OUT >$OUT/table.txt 2>&1
cat $OUT/table.txt
tar czf /tmp/session.tar.gz -C $OUT . && find $OUT -mindepth 1 ! -name table.txt -delete && mv /tmp/session.tar.gz $OUT/
