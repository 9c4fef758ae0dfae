#!/usr/bin/env bash
# tests/bench/device_calibrate.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/):
# issue 16's calibration and cost model against the measured XL step. (1) `ddprun --calibrate` on
# schedules/calibrate.lua writes $OUT/profile.json (timed: the issue asks for under 2 minutes); (2) the XL
# step (bench_xl.lua: bf16, context 512, batch 4) with the optimizer overlapped (the default) and after the
# backward (`--set parallel.optimizer_overlap=false`), 20 steps each (5 warm-up); (3) `ddpc explain
# --compare` of each run with the calibrated profile and with the built-in default, and of the calibration
# run itself with its own profile. Logs and metrics under $OUT; the verdict lines last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== calibrate ($(date +%T))"
SECONDS=0
$DDPC schedules/calibrate.lua -o $P/cal.bin -q || echo "calibrate.lua does not compile"
timeout 240 $DDPRUN $P/cal.bin --calibrate --calibrate-out $OUT/profile.json --metrics $OUT/cal.jsonl --quiet \
  >$OUT/calibrate.log 2>&1 || echo "calibrate failed: $(tail -3 $OUT/calibrate.log)"
echo "compile + calibration: ${SECONDS} s"
cat $OUT/calibrate.log
echo "== XL ($(date +%T))"
$DDPC schedules/bench_xl.lua -o $P/on.bin -q
$DDPC schedules/bench_xl.lua -o $P/off.bin -q --set parallel.optimizer_overlap=false
for v in on off; do
  timeout 120 $DDPRUN $P/$v.bin --steps 20 --metrics $OUT/xl_$v.jsonl --quiet >$OUT/xl_$v.log 2>&1 ||
    echo "$v failed: $(tail -2 $OUT/xl_$v.log)"
done
echo "== compare ($(date +%T))"
for v in on off; do
  $DDPC explain $P/$v.bin --compare $OUT/xl_$v.jsonl --profile $OUT/profile.json >$OUT/compare_${v}_calibrated.txt 2>&1
  $DDPC explain $P/$v.bin --compare $OUT/xl_$v.jsonl >$OUT/compare_${v}_default.txt 2>&1
done
$DDPC explain $P/cal.bin --compare $OUT/cal.jsonl --profile $OUT/profile.json >$OUT/compare_cal.txt 2>&1
for f in compare_on_calibrated compare_on_default compare_off_calibrated compare_off_default compare_cal; do
  echo "-- $f"
  grep -E "^(profile|step|forward|backward|optimizer|verdict)" $OUT/$f.txt
done
