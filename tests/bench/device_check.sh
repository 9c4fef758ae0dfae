#!/usr/bin/env bash
# tests/bench/device_check.sh: one GPU call after kernel changes (after tests/bench/prepare_device.sh here;
# carry dev/): the changed kernels against the reference executor in full and every kernel in --quick,
# the CUDA executor test, whole steps against the reference (tests/e2e/gpu_step.sh), the XL step with a trace
# summary, XL under attention tile variants, and XL forward-only and forward+backward plans. Logs go to
# $OUT/check.tar.gz; summaries are printed.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
mean() { python3 -c "
import json,sys,statistics
r=[json.loads(l) for l in open(sys.argv[1]) if '\"step\"' in l]; t=[x for x in r if not x['warmup']] or r
g=lambda k: statistics.mean(x[k] for x in t)
print('%-28s %8.2f ms/step (std %.2f, n %d) fwd %.2f bwd %.2f opt %.2f MFU %.3f peak %.2f GiB' % (sys.argv[2], g('step_ms'),
 statistics.pstdev(x['step_ms'] for x in t), len(t), g('forward_ms'), g('backward_ms'), g('optimizer_ms'), g('mfu'), t[-1]['peak_mem_GiB']))" "$@"; }

echo "== correctness ($(date +%T))"
for op in ROPE SWIGLU_FWD SWIGLU_BWD ATTN_BWD_PREP; do
  timeout 120 dev/bin/gpu_kernels --op $op >$L/gpu_kernels_$op.log 2>&1; echo "gpu_kernels --op $op rc=$?: $(tail -1 $L/gpu_kernels_$op.log)"
done
timeout 150 dev/bin/gpu_kernels --quick >$L/gpu_kernels_quick.log 2>&1; echo "gpu_kernels --quick rc=$?: $(tail -1 $L/gpu_kernels_quick.log)"
timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $L/cuda_exec.log)"
timeout 200 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $L/gpu_step.log

echo "== XL bf16 ctx 512 batch 4 ($(date +%T))"
. $B/attn_variants.sh; attn_variants_compile $P
$DDPRUN $P/xl_attn_default.bin --steps 15 --metrics $L/xl.jsonl --quiet >$L/xl.log 2>&1 || tail -3 $L/xl.log
mean $L/xl.jsonl "xl (new kernels)"
for v in default fwd4w bwdmt1 both; do
  $DDPRUN $P/xl_attn_$v.bin --steps 4 --trace $L/trace_$v.json --quiet >/dev/null 2>&1 || echo "trace $v failed"
done
python3 $B/trace_summary.py $L/trace_default.json --top 24
for v in default fwd4w bwdmt1 both; do
  echo "-- attention variant $v"; python3 $B/trace_summary.py $L/trace_$v.json --top 40 | grep -E "ATTN|sum of spans"
done
echo "== XL forward-only and forward+backward plans ($(date +%T))"
for m in forward forward_backward; do
  $DDPC schedules/bench_xl.lua -o $P/xl_$m.bin -q --set mode=$m && $DDPRUN $P/xl_$m.bin --steps 15 --metrics $L/xl_$m.jsonl --quiet >$L/xl_$m.log 2>&1 || tail -3 $L/xl_$m.log
  mean $L/xl_$m.jsonl "xl mode=$m"
  $DDPC inspect $P/xl_$m.bin | sed -n '/== memory ==/,/^$/p' | head -4
done
tar czf $OUT/check.tar.gz -C $L . && ls -la $OUT
echo "== done ($(date +%T))"
