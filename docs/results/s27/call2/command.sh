#!/usr/bin/env bash
# s27 call 2 (one H200): after the second half of the hostile-input pass (token files read with pread, the
# GPU probe shared by dispatch and --bench, the benchmarks' rendezvous timeout): gpu_step.sh; a token-file
# plan on the GPU and on the reference executor (the same losses within bf16's tolerance, fp32: 1e-5); the
# all-reduce and interference benchmarks on one rank. After copying build/ddpc, ddprun into dev/bin here.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "== gpu_step $(date +%T)"
timeout 220 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -cE "^ok" $L/gpu_step.log; grep -E "^FAIL" $L/gpu_step.log
echo "== token file $(date +%T)"
python3 -c "
import struct
open('/tmp/tok.bin','wb').write(struct.pack('<%dH' % 200000, *[(i * 7 + i // 13) % 256 for i in range(200000)]))"
$DDPC schedules/tiny.lua -o $P/tok.bin -q --set data.tokens=/tmp/tok.bin || echo "token plan does not compile"
timeout 60 $DDPRUN $P/tok.bin --device cuda --steps 10 --metrics $L/tok_gpu.jsonl --quiet; echo "gpu rc=$?"
timeout 60 $DDPRUN $P/tok.bin --device ref --steps 10 --metrics $L/tok_ref.jsonl --quiet; echo "ref rc=$?"
python3 - $L/tok_gpu.jsonl $L/tok_ref.jsonl <<'PY'
import json, sys
g = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"step"' in l]
r = [json.loads(l)["loss"] for l in open(sys.argv[2]) if '"step"' in l]
worst = max(abs(a - b) / abs(b) for a, b in zip(g, r))
print(("ok" if len(g) == len(r) == 10 and worst < 1e-5 else "FAIL") + f": token file, gpu vs ref, 10 steps, max rel {worst:.2e}, losses {g[0]:.6f} .. {g[-1]:.6f}")
PY
echo "== benchmarks $(date +%T)"
timeout 120 $DDPRUN --bench allreduce --nproc 1 --sizes-mb 1,16 --iters 5 2>&1 | tail -4; echo "allreduce rc=${PIPESTATUS[0]}"
timeout 200 $DDPRUN --bench interference --nproc 1 --paths default --rounds 3 2>&1 | tail -4; echo "interference rc=${PIPESTATUS[0]}"
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
