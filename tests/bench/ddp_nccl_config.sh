#!/usr/bin/env bash
# tests/bench/ddp_nccl_config.sh: the XL bucketed DDP step (10 MB buckets, 2 GPUs, 20 steps, 5 warm-up) with
# the communicators configured by the schedule's nccl = {...} (docs/SCHEDULES.md): NCCL's defaults, CTA
# policy efficiency with the arenas registered, maxCTAs 8, CTA policy zero; fp32 and bf16 gradients; and
# one GPU with the same 4 sequences per GPU (global batch 4). Per run the median step time of the timed steps, the ratio to one GPU, what NCCL took (the run
# line's "nccl"), and per gradient dtype the loss of every step, so bf16 gradients' effect on 20 XL steps
# shows against fp32's. After tests/bench/prepare_device.sh here; carry dev/. ROUNDS (default 1) repeats
# the 2-GPU runs, RUNS picks them (default all six); ms/step is the median over the rounds. The table last (inline python); logs in $OUT/ddp_nccl.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
S=/tmp/nccl_sched; rm -rf $S; mkdir -p $S
mk() { # NAME GRAD_DTYPE [NCCL_TABLE]
  cat >$S/$1.lua <<LUA
local xl_ddp = require "xl_ddp"
local s = xl_ddp { sync = "bucketed", bucket_mb = 10, grad_dtype = "$2" }
${3:+s.nccl = $3}
return schedule(s)
LUA
  $DDPC $S/$1.lua -o $P/nc_$1.bin -q || echo "nc_$1 does not compile"
}
mk fp32 fp32
mk fp32_eff_reg fp32 '{ cta_policy = "efficiency", register = true }'
mk fp32_ctas8 fp32 '{ max_ctas = 8 }'
mk fp32_zero fp32 '{ cta_policy = "zero" }'
mk bf16 bf16
mk bf16_eff_reg bf16 '{ cta_policy = "efficiency", register = true }'
$DDPC schedules/bucketed_10mb.lua -o $P/nc_single.bin -q --set parallel.ranks=1 --set data.global_batch=4
CUDA_VISIBLE_DEVICES=0 timeout 120 $DDPRUN $P/nc_single.bin --metrics $L/nc_single.r1.jsonl --quiet || echo "single failed"
for r in $(seq 1 ${ROUNDS:-1}); do
  for n in ${RUNS:-fp32 fp32_eff_reg fp32_ctas8 fp32_zero bf16 bf16_eff_reg}; do
    timeout 120 $DDPRUN $P/nc_$n.bin --nproc 2 --metrics $L/nc_$n.r$r.jsonl --quiet >$L/nc_$n.r$r.log 2>&1 ||
      echo "$n round $r failed: $(tail -1 $L/nc_$n.r$r.log)"
  done
done
tar czf $OUT/ddp_nccl.tar.gz -C $L $(cd $L && ls nc_*) 2>/dev/null
python3 - $L <<'PY'
import glob, json, os, re, statistics, sys
d = sys.argv[1]
def load(p): return [json.loads(l) for l in open(p) if l.strip().startswith("{")]
runs = {}
for p in sorted(glob.glob(f"{d}/nc_*.r*.jsonl")):
    name = re.sub(r"^nc_|\.r\d+\.jsonl$", "", os.path.basename(p))
    lines = load(p)
    run = next((l for l in lines if l.get("event") == "run"), {})
    steps = [l for l in lines if "step_ms" in l and "step" in l]
    timed = [s["step_ms"] for s in steps if not s.get("warmup")]
    if not timed: continue
    r = runs.setdefault(name, {"ms": [], "nccl": run.get("nccl", "-"), "loss": []})
    r["ms"].append(statistics.median(timed))
    r["loss"] = [s.get("loss") for s in steps]
one = statistics.median(runs["single"]["ms"]) if "single" in runs else None
print(f"{'run':14s} {'ms/step':>9s} {'x 1 GPU':>8s}  nccl")
for n, r in runs.items():
    ms = statistics.median(r["ms"])
    print(f"{n:14s} {ms:9.2f} {ms / one if one else float('nan'):8.3f}  {r['nccl']}")
if "fp32" in runs and "bf16" in runs:
    a, b = runs["fp32"]["loss"], runs["bf16"]["loss"]
    print("loss per step, fp32 gradients / bf16 gradients / difference:")
    for k, (x, y) in enumerate(zip(a, b), 1):
        print(f"  step {k:2d}  {x:.6f}  {y:.6f}  {y - x:+.2e}")
PY
