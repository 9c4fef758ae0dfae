#!/usr/bin/env bash
# tests/bench/gpipe_loading.sh: two GPUs, inside a device call (after tests/bench/prepare_device.sh; carry
# dev/): the GPipe start-up hang against CUDA's module loading. The tiny pipeline (schedules/tiny_pipeline.lua)
# as GPipe with 4 microbatches, 3 steps under ddprun --nproc 2: as ddprun runs it (a multi-rank plan sets
# CUDA_MODULE_LOADING=EAGER unless the environment chose), then with CUDA_MODULE_LOADING=LAZY (30 s limit: a
# hang there and none eagerly confirms the cause), then 1F1B both ways; each with its wall time (the
# eager loading's start-up cost).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
for s in gpipe 1f1b; do
  $DDPC schedules/tiny_pipeline.lua -o $P/tiny_$s.bin -q --set parallel.schedule=$s || echo "tiny $s does not compile"
done
for s in gpipe 1f1b; do
  for mode in default LAZY; do
    env=(); [ $mode = LAZY ] && env=(CUDA_MODULE_LOADING=LAZY)
    t=$(date +%s.%N)
    env "${env[@]}" timeout -k 5 30 $DDPRUN $P/tiny_$s.bin --nproc 2 --steps 3 --quiet >$L/gpipe_loading_${s}_$mode.log 2>&1
    rc=$?
    pkill -9 -x ddprun 2>/dev/null; sleep 1 # a hung rank ignores SIGTERM: nothing may stay behind on the GPUs
    printf '%-6s loading %-8s rc=%-3s %6.1f s  %s\n' $s $mode $rc "$(awk "BEGIN { print $(date +%s.%N) - $t }")" \
      "$([ $rc = 124 ] || [ $rc = 137 ] && echo HANG || tail -1 $L/gpipe_loading_${s}_$mode.log | cut -c1-100)"
  done
done
