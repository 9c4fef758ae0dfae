#!/usr/bin/env bash
# tests/bench/host_overhead.sh: what the host costs the XL step on one GPU (bucketed_10mb.lua as one rank,
# 4 sequences, STEPS steps (default 60), 5 warm-up). MODES: space-separated name:ENV,ENV... (default: eager,
# CUDA graphs (DDP_CUDA_GRAPH=1), each with and without the energy sampler (DDP_ENERGY=0)), ROUNDS rounds
# alternating (default 2). Per run, over the timed steps: the medians of step_ms (GPU, between the step's
# timing points), issue_ms (rank 0's host time issuing the step) and host_ms (the wall time from the
# previous step's end to this one's), then the GPU's wait between steps, host_ms - step_ms: its median,
# mean, 90th percentile and largest, and the mean as a share of the mean step (what throughput over wall
# time loses). After tests/bench/prepare_device.sh here; carry dev/. The table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
MODES=${MODES:-"eager: graph:DDP_CUDA_GRAPH=1 eager_noenergy:DDP_ENERGY=0 graph_noenergy:DDP_CUDA_GRAPH=1,DDP_ENERGY=0"}
$DDPC schedules/bucketed_10mb.lua -o $P/host_single.bin -q --set parallel.ranks=1 --set data.global_batch=4
for r in $(seq 1 "${ROUNDS:-2}"); do
  for m in $MODES; do
    IFS=: read -r name envs <<<"$m"
    env ${envs//,/ } timeout 120 $DDPRUN $P/host_single.bin --steps ${STEPS:-60} --metrics $L/host_${name}_$r.jsonl \
      --quiet || echo "$name failed"
  done
done
python3 - $L "$MODES" "${ROUNDS:-2}" <<'PY'
import json, statistics, sys
print(f"{'run':18s} {'step_ms':>8s} {'issue_ms':>9s} {'host_ms':>8s} {'wait med':>9s} {'mean':>6s} {'p90':>6s} "
      f"{'max':>6s} {'mean/step':>9s}")
for m in sys.argv[2].split():
    name = m.split(":")[0]
    for r in range(1, int(sys.argv[3]) + 1):
        try:
            rows = [json.loads(l) for l in open(f"{sys.argv[1]}/host_{name}_{r}.jsonl") if '"step"' in l]
        except OSError:
            print(f"{name}_{r}: no metrics"); continue
        t = [x for x in rows if not x.get("warmup")]
        med = {k: statistics.median(x[k] for x in t) for k in ("step_ms", "issue_ms", "host_ms")}
        w = sorted(x["host_ms"] - x["step_ms"] for x in t)
        mean = statistics.mean(w)
        print(f"{name + '_' + str(r):18s} {med['step_ms']:8.2f} {med['issue_ms']:9.2f} {med['host_ms']:8.2f} "
              f"{statistics.median(w):9.2f} {mean:6.2f} {w[int(0.9 * (len(w) - 1))]:6.2f} {w[-1]:6.2f} "
              f"{mean / statistics.mean(x['step_ms'] for x in t):9.4f}")
PY
