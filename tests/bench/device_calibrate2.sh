#!/usr/bin/env bash
# tests/bench/device_calibrate2.sh: two GPUs, one call (after tests/bench/prepare_device.sh here; carry dev/):
# issue 16's 2-GPU calibration and its targets. (1) `ddprun --calibrate` on schedules/calibrate.lua on one
# GPU (the compute figures), then calibrate_zero.lua and calibrate_ddp.lua under --nproc 2 into the same
# file ($OUT/profile2.json: the one-GPU compute figures, every collective timed alone by the sweep,
# collective_share from the DDP plan; timed); (2) the XL step on 2 GPUs as bucketed DDP (10 MB),
# ZeRO-1, FSDP and the 1F1B pipeline (8 microbatches), STEPS steps each (default 20); (3) `ddpc explain
# --compare` of each run with the 2-GPU profile and with the built-in default. Logs under $L (tarred into
# $OUT/calibrate2.tar.gz), the profile in $OUT, the verdict lines last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
STEPS=${STEPS:-20}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu2.txt
echo "== calibrate on 2 GPUs ($(date +%T))"
SECONDS=0
rm -f $OUT/profile2.json
for s in calibrate calibrate_zero calibrate_ddp; do
  $DDPC schedules/$s.lua -o $P/$s.bin -q || { echo "$s.lua does not compile"; continue; }
  launch=(--nproc 2); [ $s = calibrate ] && launch=()
  CUDA_VISIBLE_DEVICES=$([ $s = calibrate ] && echo 0 || echo 0,1) timeout 200 $DDPRUN $P/$s.bin "${launch[@]}" --calibrate --calibrate-out $OUT/profile2.json --metrics $L/$s.jsonl \
    --quiet >$L/$s.log 2>&1 || echo "$s failed: $(tail -3 $L/$s.log)"
  cat $L/$s.log
done
echo "compile + 2-GPU calibration: ${SECONDS} s"
echo "== XL on 2 GPUs ($(date +%T))"
compile() { $DDPC "$2" -o $P/c2_$1.bin -q "${@:3}" >$L/c2_$1.compile.log 2>&1 || echo "$1: $(tail -1 $L/c2_$1.compile.log)"; }
compile ddp10 schedules/bucketed_10mb.lua
compile zero1 schedules/zero1.lua
compile fsdp schedules/fsdp.lua
compile pipe1f1b schedules/pipeline_1f1b.lua --set parallel.microbatches=8
for v in ddp10 zero1 fsdp pipe1f1b; do
  [ -f $P/c2_$v.bin ] || continue
  timeout 150 $DDPRUN $P/c2_$v.bin --nproc 2 --steps $STEPS --metrics $L/c2_$v.jsonl --quiet >$L/c2_$v.log 2>&1 ||
    echo "$v failed: $(tail -2 $L/c2_$v.log)"
done
echo "== compare ($(date +%T))"
for v in ddp10 zero1 fsdp pipe1f1b; do
  [ -f $L/c2_$v.jsonl ] || continue
  [ -f $OUT/profile2.json ] &&
    $DDPC explain $P/c2_$v.bin --compare $L/c2_$v.jsonl --profile $OUT/profile2.json >$L/c2_${v}_calibrated.txt 2>&1
  $DDPC explain $P/c2_$v.bin --compare $L/c2_$v.jsonl >$L/c2_${v}_default.txt 2>&1
done
tar czf $OUT/calibrate2.tar.gz -C $L $(cd $L && ls calibrate* c2_* gpu2.txt 2>/dev/null)
for v in ddp10 zero1 fsdp pipe1f1b; do
  for p in calibrated default; do
    f=$L/c2_${v}_$p.txt
    [ -f $f ] || continue
    echo "-- $v, $p profile"
    grep -E "^(== rank|step|forward|backward|optimizer|exposed|verdict)" $f
  done
done
