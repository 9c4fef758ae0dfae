#!/usr/bin/env bash
# tests/bench/host_overhead.sh: what the host costs the XL step on one GPU (bucketed_10mb.lua as one rank,
# 4 sequences, 20 steps, 5 warm-up), eager and as CUDA graphs (DDP_CUDA_GRAPH=1): per run the medians of
# the timed steps' step_ms (GPU, between the step's timing points), issue_ms (rank 0's host time issuing
# the step) and host_ms (its whole loop iteration: issue, wait, loss, host sum), and (host - step) / step,
# the share of a step the GPU waits for the host between steps. After tests/bench/prepare_device.sh here;
# carry dev/. The table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
$DDPC schedules/bucketed_10mb.lua -o $P/host_single.bin -q --set parallel.ranks=1 --set data.global_batch=4
for mode in eager graph; do
  g=0; [ $mode = graph ] && g=1
  DDP_CUDA_GRAPH=$g timeout 120 $DDPRUN $P/host_single.bin --metrics $L/host_$mode.jsonl --quiet || echo "$mode failed"
done
python3 - $L <<'PY'
import json, statistics, sys
print(f"{'run':6s} {'step_ms':>8s} {'issue_ms':>9s} {'host_ms':>8s} {'(host-step)/step':>17s}")
for mode in ("eager", "graph"):
    try:
        rows = [json.loads(l) for l in open(f"{sys.argv[1]}/host_{mode}.jsonl") if '"step"' in l]
    except OSError:
        print(f"{mode:6s} no metrics"); continue
    t = [r for r in rows if not r.get("warmup")]
    med = {k: statistics.median(r[k] for r in t) for k in ("step_ms", "issue_ms", "host_ms")}
    print(f"{mode:6s} {med['step_ms']:8.2f} {med['issue_ms']:9.2f} {med['host_ms']:8.2f} "
          f"{(med['host_ms'] - med['step_ms']) / med['step_ms']:17.4f}")
PY
