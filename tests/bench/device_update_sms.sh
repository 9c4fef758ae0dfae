#!/usr/bin/env bash
# tests/bench/device_update_sms.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/).
# The XL step (bf16, context 512, batch 4) with its AdamW updates on the side stream during the backward:
# how much do the updates take from the compute stream, and does block scheduling give it back?
# Variants (SET=2 picks the second set), alternating, ROUNDS rounds of 20 steps (5 warm-up):
#   set 1: the plan's defaults; DDP_STREAM_PRIORITY=1 (compute stream at the device's highest priority, the
#   update stream at its lowest); AdamW with one pack per block (DDP_TUNE_ADAMW_MAX_GRID, so an update
#   block lives microseconds and frees its SM soon); both; both with DDP_TUNE_ADAMW_UNROLL=1; the optimizer
#   after the backward;
#   set 2: the defaults; streams = { update_priority = "low" } with update_tail 0, 0.1, 0.25, 0.5;
#   set 3: the defaults (since then: low with update_tail 0.25) against update_priority = "equal", and the
#   defaults under DDP_CUDA_GRAPH=1 (how much of the step one graph covers, the host's issue time); no traces.
# Then a traced step of the defaults and of the second variant (trace_summary.py), PyTorch's 8192^3 ceiling
# for mfu, and torch.compile.
# Logs in $OUT/logs.tgz; the table last (also $OUT/table.txt).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== ceiling ($(date +%T))"
ceiling $L/torch_kernels.log
echo "== plans ($(date +%T))"
$DDPC schedules/bench_xl.lua -o $P/base.bin -q
if [ "${SET:-1}" = 1 ]; then
  DDP_TUNE_ADAMW_MAX_GRID=1048576 $DDPC schedules/bench_xl.lua -o $P/small.bin -q
  DDP_TUNE_ADAMW_MAX_GRID=1048576 DDP_TUNE_ADAMW_UNROLL=1 $DDPC schedules/bench_xl.lua -o $P/small1.bin -q
  $DDPC schedules/bench_xl.lua -o $P/serial.bin -q --set parallel.optimizer_overlap=false
  # name plan priority
  VARIANTS="default:base:0 prio:base:1 small:small:0 prio_small:small:1 prio_small_u1:small1:1 serial:serial:0"
elif [ "${SET:-1}" = 3 ]; then
  $DDPC schedules/bench_xl.lua -o $P/equal.bin -q --set streams.update_priority=equal
  VARIANTS="default:base:0 equal:equal:0"
else
  for t in 0 0.1 0.25 0.5; do
    $DDPC schedules/bench_xl.lua -o $P/low$t.bin -q --set streams.update_priority=low --set streams.update_tail=$t
  done
  VARIANTS="default:base:0 low:low0:0 low_tail0.1:low0.1:0 low_tail0.25:low0.25:0 low_tail0.5:low0.5:0"
fi
echo "== XL ($(date +%T))"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for v in $VARIANTS; do
    IFS=: read -r name plan prio <<<"$v"
    DDP_STREAM_PRIORITY=$prio timeout 120 $DDPRUN $P/$plan.bin --steps 20 $PEAK --metrics $L/xl_${name}_$round.jsonl \
      --quiet >$L/xl_${name}_$round.log 2>&1 || echo "$name failed: $(tail -2 $L/xl_${name}_$round.log)"
  done
done
echo "== traces ($(date +%T))"
TRACED="default:base:0 prio_small:small:1"; [ "${SET:-1}" = 2 ] && TRACED="default:base:0 low:low0:0"
[ "${SET:-1}" = 3 ] && TRACED=""
for v in $TRACED; do
  IFS=: read -r name plan prio <<<"$v"
  DDP_STREAM_PRIORITY=$prio timeout 120 $DDPRUN $P/$plan.bin --steps 3 --trace $L/trace_$name.json --quiet >/dev/null 2>&1 &&
    python3 $B/trace_summary.py $L/trace_$name.json >$L/trace_$name.txt 2>&1
  rm -f $L/trace_$name.json
done
if [ "${SET:-1}" = 3 ]; then
  DDP_CUDA_GRAPH=1 timeout 120 $DDPRUN $P/base.bin --steps 20 $PEAK --metrics $L/xl_graph_1.jsonl --quiet >/dev/null 2>$L/xl_graph.err ||
    echo "graph failed: $(tail -1 $L/xl_graph.err)"
  grep -m1 "step program" $L/xl_graph.err; VARIANTS="$VARIANTS graph:base:0"
fi
xl_tail "$TRACED" 1
