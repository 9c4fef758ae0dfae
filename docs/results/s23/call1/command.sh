#!/usr/bin/env bash
# ncu at the XL step's attention shape (B 4, H 25, T 512, d 64, causal, bf16): ours (forward, split backward,
# fused backward) and SDPA's kernels, one launch each after warm-up; details pages + raw CSV into logs.tgz.
set -u
. tests/bench/device_env.sh
K=dev/bin/ddpbench_kernels
NCU="ncu --clock-control none --set full --import-source no"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
ours() { # NAME REGEX ARGS...
  local n=$1 re=$2; shift 2
  timeout 120 $NCU --kernel-name regex:"$re" --launch-skip 4 --launch-count 1 -o $L/$n -f \
    $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --variants defaults --inner 1 "$@" >$L/$n.run.log 2>&1
  echo "$n rc=$?"
  ncu --import $L/$n.ncu-rep --page details >$L/$n.txt 2>&1
  ncu --import $L/$n.ncu-rep --page raw --csv >$L/$n.raw.csv 2>&1
}
ours fwd '^ddp_attn_fwd$'
ours dkv '^ddp_attn_bwd_dkv$'
ours dq '^ddp_attn_bwd_dq$'
ours fused '^ddp_attn_bwd_fused$' --fused
cat >$L/sdpa.py <<'PY'
import torch, torch.nn.functional as F
q, k, v = (torch.randn(4, 25, 512, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
go = torch.randn_like(q)
for i in range(8):
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o.backward(go)
    q.grad = k.grad = v.grad = None
torch.cuda.synchronize()
PY
timeout 200 ncu --clock-control none --print-summary none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread python3 $L/sdpa.py >$L/sdpa_list.txt 2>&1
echo "sdpa list rc=$?"
grep -E '^\s+[a-zA-Z_].*\(|gpu__time_duration' $L/sdpa_list.txt | tail -40
timeout 200 $NCU --kernel-name regex:'(?i)(fmha|flash|sdpa|attn|cudnn|dot_do)' --launch-skip 12 --launch-count 6 -o $L/sdpa -f python3 $L/sdpa.py >$L/sdpa.run.log 2>&1
echo "sdpa rc=$?"
ncu --import $L/sdpa.ncu-rep --page details >$L/sdpa.txt 2>&1
ncu --import $L/sdpa.ncu-rep --page raw --csv >$L/sdpa.raw.csv 2>&1
for f in fwd dkv dq fused sdpa; do
  echo "== $f"; grep -E '^  [a-zA-Z_].*\(|Duration|Registers Per|Grid Size|Block Size|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Throughput|DRAM Throughput|Dynamic Shared|Waves Per SM|Warp Cycles Per Issued' $L/$f.txt | head -60
done
tar czf $OUT/logs.tgz -C $L .
