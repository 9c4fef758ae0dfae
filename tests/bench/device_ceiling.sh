#!/usr/bin/env bash
# tests/bench/device_ceiling.sh: one GPU (nvidia-h200), after tests/bench/prepare_device.sh here (carry dev/):
# the dense bf16 ceiling that the XL step's MFU is measured against, as a burst (the anchor's 20 GEMMs,
# before the power limiter acts) and sustained for CEIL_S seconds (default 12), before and after the XL
# step (schedules/bench_xl.lua) for 30 and for XL_LONG steps (default 200); the table of
# tests/bench/summary_ceiling.py last (also $OUT/table.txt), the logs in $OUT/ceiling.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
D=$L/ceiling; rm -rf $D; mkdir -p $D
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader | tee $D/gpu.txt
timeout 120 python3 $B/torch_extra.py --ceiling ${CEIL_S:-12} >$D/ceiling_1_before.log 2>&1 || echo "ceiling 1 rc=$?"
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q || { echo "bench_xl.lua does not compile"; exit 1; }
timeout 120 $DDPRUN $P/xl.bin --steps 30 --metrics $D/xl30.jsonl --quiet >$D/xl30.log 2>&1 || echo "xl 30 failed: $(tail -1 $D/xl30.log)"
timeout 200 $DDPRUN $P/xl.bin --steps ${XL_LONG:-200} --metrics $D/xl${XL_LONG:-200}.jsonl --quiet >$D/xl_long.log 2>&1 ||
  echo "xl long failed: $(tail -1 $D/xl_long.log)"
timeout 120 python3 $B/torch_extra.py --ceiling ${CEIL_S:-12} >$D/ceiling_2_after.log 2>&1 || echo "ceiling 2 rc=$?"
tar czf $OUT/ceiling.tar.gz -C $L ceiling
python3 $B/summary_ceiling.py $D | tee $OUT/table.txt
