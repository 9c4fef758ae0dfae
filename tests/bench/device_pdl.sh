#!/usr/bin/env bash
# tests/bench/device_pdl.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/).
# Programmatic dependent launch (DDP_PDL=1, runtime/cuda/kernels.c; every template kernel begins with
# DDP_GRID_DEPENDENCY): the CUDA executor's tests and gpu_step.sh under it (losses against the reference,
# CUDA graphs bit for bit against eager), the leaderboard attention with the fused backward with and without
# it beside SDPA (GPU time), and the XL step (bench_xl.lua) with and without it, ROUNDS (3) alternating rounds
# of XL_STEPS (30) steps, whose losses must be the same bit for bit (the overlap changes no arithmetic); with
# `prepare_ab.sh before REV` here first, also the revision before the wait (dev/ab/before) in each round;
# SERIAL=1 also the optimizer after the backward (optimizer_overlap = false) without and with; CHECK=0 and
# LB=0 skip the correctness part and the leaderboard.
# Logs in $OUT/logs.tgz; the table last (also $OUT/table.txt).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader | tee $L/gpu.txt
K=dev/bin/ddpbench_kernels
if [ "${CHECK:-1}" = 1 ]; then
echo "== correctness under DDP_PDL=1 ($(date +%T))"
DDP_PDL=1 timeout 90 dev/bin/test_cuda_exec_gpu >$L/cuda_exec_pdl.log 2>&1; echo "test_cuda_exec_gpu (PDL) rc=$?: $(tail -1 $L/cuda_exec_pdl.log)"
DDP_PDL=1 timeout 240 bash tests/e2e/gpu_step.sh >$L/gpu_step_pdl.log 2>&1; echo "gpu_step (PDL) rc=$?"
grep -cE "^ok" $L/gpu_step_pdl.log | sed 's/^/ok lines: /'; grep -E "^(FAIL|SKIP)" $L/gpu_step_pdl.log | cut -c1-200
fi
[ "${LB:-1}" = 1 ] && echo "== leaderboard ($(date +%T))"
for r in $([ "${LB:-1}" = 1 ] && echo 1 2 3); do
  timeout 60 $K --only leaderboard --fused >$L/lb_off_$r.log 2>&1 || echo "off $r rc=$?"
  timeout 60 $K --only leaderboard --fused --pdl >$L/lb_on_$r.log 2>&1 || echo "on $r rc=$?"
  timeout 60 python3 $B/torch_extra.py --sdpa-shape 1:16:16384:64 >$L/lb_sdpa_$r.log 2>&1 || echo "sdpa $r rc=$?"
done
echo "== XL ($(date +%T))"
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q
$DDPC schedules/bench_xl.lua -o $P/xl_serial.bin -q --set parallel.optimizer_overlap=false
VS="off on"; [ -x dev/ab/before/ddprun ] && VS="before off on" # prepare_ab.sh before REV: the code before the wait
[ "${SERIAL:-0}" = 1 ] && VS="$VS serial_off serial_on" # the optimizer after the backward, without and with
for r in $(seq 1 "${ROUNDS:-3}"); do
  for v in $VS; do
    pdl=0 run=$DDPRUN plan=$P/xl.bin; [ ${v#serial_} = on ] && pdl=1
    [ $v = before ] && run=dev/ab/before/ddprun plan=dev/ab/before/xl.bin
    [ ${v%_*} = serial ] && plan=$P/xl_serial.bin
    DDP_PDL=$pdl timeout 120 $run $plan --steps "${XL_STEPS:-30}" --metrics $L/xl_${v}_$r.jsonl --quiet \
      >$L/xl_${v}_$r.log 2>&1 || echo "xl $v $r failed: $(tail -1 $L/xl_${v}_$r.log)"
  done
done
tar czf $OUT/logs.tgz -C $L .
echo "== table ($(date +%T))"
python3 - $L "${ROUNDS:-3}" <<'PY' | tee $OUT/table.txt
import json, re, statistics, sys
L, n = sys.argv[1], int(sys.argv[2])
def lb(path):
    for l in open(path):
        m = re.match(r"leaderboard d 64 .*fwd ([0-9.]+) ms, prep ([0-9.]+), fused ([0-9.]+), store ([0-9.]+), fwd\+bwd ([0-9.]+)", l)
        if m: return [float(x) for x in m.groups()]
    return [float("nan")] * 5
def sdpa(path):
    for l in open(path):
        if l.startswith("TORCH ") and '"sdpa_shape"' in l: return json.loads(l[6:])["fwd_bwd_ms"]
    return float("nan")
print("leaderboard d 64, fused backward (ms): fwd prep fused store | fwd+bwd | / SDPA")
for r in range(1, 4):
    if not __import__("os").path.exists(f"{L}/lb_sdpa_{r}.log"): continue
    s = sdpa(f"{L}/lb_sdpa_{r}.log")
    for v in ("off", "on"):
        x = lb(f"{L}/lb_{v}_{r}.log")
        print(f"round {r} PDL {v:3s}: {x[0]:.3f} {x[1]:.3f} {x[2]:.3f} {x[3]:.3f} | {x[4]:.3f} | {x[4] / s:.3f}  (SDPA {s:.3f})")
print("XL step (ms, medians of the timed steps): step fwd bwd tail | last loss")
for v in ("before", "off", "on", "serial_off", "serial_on"):
    for r in range(1, n + 1):
        if v in ("before", "serial_off", "serial_on") and not __import__("os").path.exists(f"{L}/xl_{v}_{r}.jsonl"): continue
        try:
            rows = [json.loads(l) for l in open(f"{L}/xl_{v}_{r}.jsonl") if '"step"' in l]
        except OSError:
            print(f"PDL {v} round {r}: no metrics"); continue
        t = [x for x in rows if not x.get("warmup")]
        g = lambda k: statistics.median(x[k] for x in t)
        print(f"PDL {v:10s} round {r}: {g('step_ms'):.2f} {g('forward_ms'):.2f} {g('backward_ms'):.2f} {g('optimizer_ms'):.2f} | {rows[-1]['loss']:.6f}")
PY
