#!/usr/bin/env bash
# s28 call 2 (one H200): after this session's fixes (the token file's window rule, checkpoints moved aside,
# named as ddprun names them and locked, the checkpoint folder checked before step 1, DDP_* knobs parsed at
# start, stdout checked, trace categories, ddp{ranks = 1}'s update after the backward, pipeline FLOPs):
# test_cuda_exec_gpu, gpu_step.sh; a token-file plan of 16 * 32 + 1 tokens on the GPU and on the reference
# executor; the XL step (bench_xl.lua, 30 steps, two rounds) and torch.compile's 30-step energy run in the
# same call. After prepare_device.sh here; carry dev/.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader
echo "== GPU tests $(date +%T)"
timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec.log 2>&1; echo "test_cuda_exec_gpu rc=$?: $(tail -1 $L/cuda_exec.log)"
timeout 220 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -cE "^ok" $L/gpu_step.log; grep -E "^FAIL" $L/gpu_step.log
echo "== token file $(date +%T)"
python3 -c "
import struct
n = 16 * 32 + 1
open('/tmp/tok.bin','wb').write(struct.pack('<%dH' % n, *[(i * 7 + i // 13) % 256 for i in range(n)]))"
$DDPC schedules/tiny.lua -o $P/tok.bin -q --set data.tokens=/tmp/tok.bin --set precision=fp32 || echo "token plan does not compile"
timeout 60 $DDPRUN $P/tok.bin --device cuda --steps 10 --metrics $L/tok_gpu.jsonl --quiet; echo "gpu rc=$?"
timeout 60 $DDPRUN $P/tok.bin --device ref --steps 10 --metrics $L/tok_ref.jsonl --quiet; echo "ref rc=$?"
python3 - $L/tok_gpu.jsonl $L/tok_ref.jsonl <<'PY'
import json, sys
g = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"step"' in l]
r = [json.loads(l)["loss"] for l in open(sys.argv[2]) if '"step"' in l]
worst = max(abs(a - b) / abs(b) for a, b in zip(g, r)) if g and r else float("nan")
print(("ok" if len(g) == len(r) == 10 and worst < 1e-5 else "FAIL") + f": token file of 513 tokens, gpu vs ref, 10 steps, max rel {worst:.2e}, losses {g[0]:.6f} .. {g[-1]:.6f}")
PY
echo "== XL $(date +%T)"
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q || echo "xl does not compile"
for r in 1 2; do
  timeout 120 $DDPRUN $P/xl.bin --steps 30 --metrics $L/xl.r$r.jsonl >$L/xl.r$r.log 2>&1; echo "xl r$r rc=$?: $(tail -1 $L/xl.r$r.log)"
done
echo "== torch.compile energy $(date +%T)"
timeout 300 python3 $B/torch_extra.py --xl-energy --compile >$L/torch_energy.log 2>&1; echo "torch energy rc=$?"
grep -h '"xl_energy"' $L/torch_energy.log
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
