#!/usr/bin/env bash
# tests/bench/device_priority.sh: on 2 GPUs (carry dev/), bucketed DDP of XL with and without
# DDP_STREAM_PRIORITY=1 (compute stream at high priority, NCCL's stream at low), interleaved.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
PLANS=$P; . $B/plans.sh
"$DDPC" schedules/bucketed_100mb.lua -o $P/b100.bin -q && "$DDPC" schedules/bucketed_10mb.lua -o $P/b10bf16.bin -q --set parallel.grad_dtype=bf16
for rep in 1 2; do for plan in b100 b10bf16; do for pr in 0 1; do
  DDP_STREAM_PRIORITY=$pr timeout 45 $DDPRUN $P/$plan.bin --nproc 2 --steps 12 --metrics $L/prio_${plan}_${pr}_$rep.jsonl --quiet >/dev/null 2>&1 || echo "$plan $pr failed"
  python3 -c "
import json,sys,statistics
r=[json.loads(l) for l in open(sys.argv[1]) if '\"step\"' in l and '\"warmup\": false' in l]
g=lambda k: statistics.mean(x[k] for x in r)
print('%-8s priority=%s rep %s: step %.2f ms, backward %.2f, comm %.2f, exposed %.2f' % (sys.argv[2], sys.argv[3], sys.argv[4], g('step_ms'), g('backward_ms'), g('comm_ms'), g('exposed_comm_ms')))" $L/prio_${plan}_${pr}_$rep.jsonl $plan $pr $rep
done; done; done
tar czf $OUT/prio.tar.gz -C $L .
