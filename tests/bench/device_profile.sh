#!/usr/bin/env bash
# tests/bench/device_profile.sh: one GPU call that shows where the XL step's time goes and records the
# kernel grids (after tests/bench/prepare_device.sh here; carry dev/). Per-instruction traces of the XL bf16
# step with the heuristic's GEMM algorithms (DDP_GEMM_TUNE=0) and with the tuned ones, summarised by
# trace_summary.py; PyTorch's matmuls of the same shapes; ddpbench_kernels' full attention and RMSNorm
# grids; PyTorch SDPA over the same attention grid and the anchor's kernel baselines. Logs go to
# $OUT/profile.tar.gz; the summaries are printed.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
$DDPC schedules/bench_xl.lua -o /tmp/xl.bin -q || exit 1
mean() { python3 -c "
import json,sys,statistics
r=[json.loads(l) for l in open(sys.argv[1]) if '\"step\"' in l]; t=[x for x in r if not x['warmup']]
print('%s: %.2f ms/step (std %.2f, n %d) fwd %.2f bwd %.2f opt %.2f MFU %.3f' % (sys.argv[2], statistics.mean(x['step_ms'] for x in t),
 statistics.pstdev(x['step_ms'] for x in t), len(t), statistics.mean(x['forward_ms'] for x in t),
 statistics.mean(x['backward_ms'] for x in t), statistics.mean(x['optimizer_ms'] for x in t), statistics.mean(x['mfu'] for x in t)))" "$@"; }

echo "== XL bf16 ctx 512 batch 4 ($(date +%T))"
t0=$(date +%s.%N)
DDP_GEMM_TUNE=0 $DDPRUN /tmp/xl.bin --steps 15 --metrics $L/xl_heur.jsonl --quiet >$L/xl_heur.log 2>&1 || tail -3 $L/xl_heur.log
t1=$(date +%s.%N)
$DDPRUN /tmp/xl.bin --steps 15 --metrics $L/xl_tuned.jsonl --quiet >$L/xl_tuned.log 2>&1 || tail -3 $L/xl_tuned.log
t2=$(date +%s.%N)
echo "wall: heuristic run $(python3 -c "print(round($t1 - $t0, 1))") s, first tuned run (tunes at load) $(python3 -c "print(round($t2 - $t1, 1))") s; $(ls dev/cache/gemm 2>/dev/null | wc -l) GEMM choices stored"
mean $L/xl_heur.jsonl "heuristic algos"; mean $L/xl_tuned.jsonl "tuned algos"
DDP_GEMM_TUNE=0 $DDPRUN /tmp/xl.bin --steps 4 --trace $L/trace_heur.json --quiet >/dev/null 2>&1
$DDPRUN /tmp/xl.bin --steps 4 --trace $L/trace_tuned.json --quiet >/dev/null 2>&1
echo "-- trace, heuristic algorithms"; python3 $B/trace_summary.py $L/trace_heur.json --top 45
echo "-- trace, tuned algorithms"; python3 $B/trace_summary.py $L/trace_tuned.json --top 20
echo "== PyTorch matmuls of the XL shapes ($(date +%T))"
timeout 120 python3 $B/torch_extra.py --gemm >$L/torch_gemm.log 2>&1
grep '"gemm"' $L/torch_gemm.log | python3 -c "
import sys,json
for l in sys.stdin: r=json.loads(l[6:]); print('%-16s %6d %6d %6d %8.3f ms %6.1f TFLOP/s' % (r['name'],r['M'],r['N'],r['K'],r['ms'],r['TFLOPs']))"

echo "== ddpbench_kernels attention grid ($(date +%T))"
timeout 300 dev/bin/ddpbench_kernels --only attention --out $L/kbench_attention.json >$L/kbench_attention.log 2>&1; echo "rc=$?"
cat $L/kbench_attention.log
echo "== ddpbench_kernels rmsnorm ($(date +%T))"
timeout 90 dev/bin/ddpbench_kernels --only rmsnorm --out $L/kbench_rmsnorm.json >$L/kbench_rmsnorm.log 2>&1; echo "rc=$?"
cat $L/kbench_rmsnorm.log
echo "== PyTorch SDPA grid and kernel baselines ($(date +%T))"
timeout 200 python3 $B/torch_extra.py --attention >$L/torch_attention.log 2>&1; echo "rc=$?"
timeout 120 python3 $B/torch_ddp_anchor.py --skip-ddp --kernels >$L/torch_kernels.log 2>&1; echo "rc=$?"
grep -E "ceiling|attention|rmsnorm" $L/torch_kernels.log
python3 - $L/torch_attention.log <<'PY'
import json, sys
rows = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("TORCH ") and '"attention"' in l]
for r in rows:
    v = "OOM" if r.get("oom") else r.get("error", "") or "fwd %.3f bwd %.3f both %.3f ms" % (r["fwd_ms"], r["bwd_ms"], r["fwd_bwd_ms"])
    print("sdpa %s d%-3d T%-6d %s" % (r["dtype"], r["d"], r["T"], v))
PY
tar czf $OUT/profile.tar.gz -C $L . && ls -la $OUT
echo "== done ($(date +%T))"
