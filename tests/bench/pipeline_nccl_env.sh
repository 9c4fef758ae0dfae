#!/usr/bin/env bash
# tests/bench/pipeline_nccl_env.sh: two GPUs (after tests/bench/prepare_device.sh here; carry dev/): does
# NCCL's point-to-point setup move the pipeline bubble? Interleaved 1F1B (2 virtual stages) with 8 and 16
# microbatches and 1F1B with 16 on the XL model, each under the NCCL environments in VARIANTS (default:
# none, more point-to-point channels, smaller and larger NVLink chunks), STEPS steps (default 12, the last
# traced): ms/step (median of the untraced timed steps) and the bubble `ddpc plot timeline` measures
# against the formula. Logs under $L; the table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
STEPS=${STEPS:-12}
VARIANTS=${VARIANTS:-"default NCCL_MIN_P2P_NCHANNELS=8 NCCL_MIN_P2P_NCHANNELS=32 NCCL_P2P_NVL_CHUNKSIZE=131072 NCCL_P2P_NVL_CHUNKSIZE=2097152"}
PE=$P/nccl_env; mkdir -p $PE
$DDPC schedules/pipeline_1f1b.lua -o $PE/il8.bin -q --set parallel.microbatches=8 --set parallel.schedule=interleaved --set parallel.virtual_stages=2
$DDPC schedules/pipeline_1f1b.lua -o $PE/il16.bin -q --set parallel.microbatches=16 --set parallel.schedule=interleaved --set parallel.virtual_stages=2
$DDPC schedules/pipeline_1f1b.lua -o $PE/f16.bin -q --set parallel.microbatches=16
printf "%-34s %-5s %9s %8s %8s\n" variant plan ms/step bubble formula >$L/nccl_env.table
for v in $VARIANTS; do
  envs=(); [ "$v" = default ] || envs=("$v")
  for plan in il8 il16 f16; do
    n=${v//[^A-Za-z0-9]/_}_$plan
    env "${envs[@]}" timeout 90 $DDPRUN $PE/$plan.bin --nproc 2 --steps $STEPS --metrics $L/ne_$n.jsonl \
      --trace $L/ne_$n.trace.json --quiet >$L/ne_$n.log 2>&1 || { echo "$n failed: $(tail -1 $L/ne_$n.log)"; continue; }
    $DDPC plot timeline -o $L/ne_$n.svg $L/ne_$n.trace.rank0.json $L/ne_$n.trace.rank1.json >$L/ne_$n.timeline.jsonl 2>>$L/ne_$n.log
    python3 - "$L/ne_$n.jsonl" "$L/ne_$n.timeline.jsonl" "$v" "$plan" >>$L/nccl_env.table <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"step"')]
ms = statistics.median(r["step_ms"] for r in rows[5:-1])
tl = [json.loads(l) for l in open(sys.argv[2]) if '"timeline"' in l][0]
print("%-34s %-5s %9.2f %8.4f %8.4f" % (sys.argv[3], sys.argv[4], ms, tl["bubble_measured"], tl["bubble_formula"]))
PY
  done
done
cat $L/nccl_env.table
