#!/usr/bin/env bash
# tests/bench/tensor_4gpu.sh: one 4-GPU call for the device meshes (after tests/bench/prepare_device.sh here;
# carry dev/): first the equivalence suite on 4 GPUs (tests/e2e/gpu_ddp.sh with DDP_GPU_RANKS=4: the DDP
# modes, ZeRO, FSDP, tensor = 4, data 2 x tensor 2, FSDP x tensor, pipeline x tensor against one GPU), then
# the large model (1280/5120/36 layers/20 heads, the setup of schedules/lib/xl_setup.lua: context 512,
# vocab 10000, bf16, AdamW; 4 sequences per data replica) on 4 GPUs as data=4 (DDP, 10 MB buckets),
# tensor=4, data 2 x tensor 2, FSDP data=4 and pipeline 2 x tensor 2 (1F1B, 4 microbatches of 2), 5 warmup
# + 10 timed steps each, and PyTorch DTensor tensor parallelism over the 4 GPUs (tests/bench/torch_tp.py) in
# the same call. Logs under $OUT; the table last (ms/step, tokens/s, tensor-parallel and exposed
# communication, peak memory per GPU). BUDGET (default 560 s) bounds the call.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
T0=$(date +%s)
left() { echo $((${BUDGET:-560} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== gpu_ddp.sh on 4 GPUs ($(date +%T))"
DDP_GPU_RANKS=4 timeout $(( $(left) > 240 ? 240 : $(left) )) bash tests/e2e/gpu_ddp.sh >$OUT/gpu_ddp4.log 2>&1
echo "gpu_ddp.sh (4 GPUs): rc=$?, $(grep -c '^ok' $OUT/gpu_ddp4.log) ok, $(grep -c '^FAIL' $OUT/gpu_ddp4.log) FAIL"
grep '^FAIL' $OUT/gpu_ddp4.log | head

S=$P/mesh4; mkdir -p $S; cp schedules/lib/models.lua $S/
sched() { # NAME GLOBAL_BATCH PARALLEL [MESH]: $S/NAME.lua
  cat >$S/$1.lua <<LUA
local models = require "models"
return schedule { model = models.transformer("large", { context = 512, vocab = 10000 }),
  data = { global_batch = $2, tokens = "random", seed = 1 }, precision = "bf16",
  optimizer = adamw { lr = 3e-4, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
  parallel = $3, ${4:-} steps = 15, warmup = 5, seed = 1 }
LUA
}
sched data4 16 'ddp { ranks = 4, sync = "bucketed", bucket_mb = 10 }'
sched tensor4 4 'ddp { ranks = 4 }' 'mesh = { tensor = 4 },'
sched d2t2 8 'ddp { ranks = 4, sync = "bucketed", bucket_mb = 10 }' 'mesh = { data = 2, tensor = 2 },'
sched fsdp4 16 'fsdp { ranks = 4 }'
sched p2t2 4 'pipeline { stages = 2, microbatches = 2, schedule = "1f1b" }' 'mesh = { tensor = 2 },'
for n in data4 tensor4 d2t2 fsdp4 p2t2; do
  if [ "$(left)" -lt 60 ]; then echo "$n: out of time" | tee $OUT/ours_$n.log; continue; fi
  echo "== $n ($(date +%T), $(left) s left)"
  { "$DDPC" $S/$n.lua -o $S/$n.bin -q &&
    timeout 90 "$DDPRUN" $S/$n.bin --nproc 4 --metrics $OUT/ours_$n.jsonl --quiet; } >$OUT/ours_$n.log 2>&1 ||
    echo "$n: failed: $(tail -1 $OUT/ours_$n.log)" | tee -a $OUT/ours_$n.log
done
if [ "$(left)" -gt 100 ]; then
  echo "== PyTorch DTensor TP over 4 GPUs ($(date +%T))"
  timeout -k 10 $(( $(left) - 20 )) torchrun --nproc_per_node=4 --master_port=29547 $B/torch_tp.py --size large --modes tp \
    --budget-s $(( $(left) - 40 )) >$OUT/torch_tp4.log 2>&1
  grep -E "^TORCH_TP" $OUT/torch_tp4.log | head -3
fi
python3 - $OUT <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
print("\nlarge on 4 GPUs: layout, ms/step, tokens/s, x PyTorch TP, TP comm ms, exposed comm ms, peak GiB per GPU")
torch = None
for line in open(os.path.join(out, "torch_tp4.log")) if os.path.exists(os.path.join(out, "torch_tp4.log")) else []:
    if line.startswith("TORCH_TP "):
        d = json.loads(line[9:])
        if d.get("mode") == "tp" and "tokens_per_s" in d: torch = d
for n in ["data4", "tensor4", "d2t2", "fsdp4", "p2t2"]:
    f = os.path.join(out, "ours_%s.jsonl" % n)
    if not os.path.exists(f):
        print("%-8s %s" % (n, open(os.path.join(out, "ours_%s.log" % n)).read().strip().splitlines()[-1:] or "no run"))
        continue
    rows = [json.loads(l) for l in open(f) if l.strip()]
    run = next((r for r in rows if r.get("event") == "run"), {})
    steps = [r for r in rows if "step_ms" in r and not r.get("warmup")]
    if not steps:
        print("%-8s no timed steps" % n); continue
    ms = statistics.median(s["step_ms"] for s in steps)
    tps = run.get("tokens_per_step", 0) / (ms * 1e-3)
    ratio = "%.2f" % (tps / torch["tokens_per_s"]) if torch else "-"
    peak = max(max(s.get("rank_peak_mem_GiB", [s.get("peak_mem_GiB", 0)])) for s in steps)
    print("%-8s %8.2f %9.0f %6s %8.2f %8.2f %6.1f" % (n, ms, tps, ratio, statistics.mean(s.get("tp_comm_ms", 0) for s in steps),
                                                     statistics.mean(s.get("exposed_comm_ms", 0) for s in steps), peak))
if torch:
    print("PyTorch DTensor TP (4 GPUs): %.2f ms/step, %.0f tokens/s, peak %.1f GiB" % (torch["ms_per_step"], torch["tokens_per_s"],
          max(torch.get("peak_alloc_GiB", [0]))))
PY
