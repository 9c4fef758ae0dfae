#!/usr/bin/env bash
# tests/e2e/gpu_step.sh (gpu): whole training steps on the GPU against the reference executor from the same
# init and data: the tiny transformer (fp32: losses within 1e-5 relative; bf16: 2e-2, also with bf16
# gradients; with one head of 64, also with the fused attention backward) and the toy MLPs
# (fp32, 1e-5), 10 steps each; the ZeRO levels on 1 GPU (zero1, zero2, fsdp fp32 and bf16, fsdp with
# fp32 gathers; zero2 with the update stream also replayed as CUDA graphs, bit for bit the eager run); the
# update streams at low priority (streams = { update_priority = "low" }); the update streams in an SM
# partition of their own (DDP_SIDE_SMS, DDP_GEMM_SM_TARGET); then
# each executor resumes from the other's final checkpoint (loadable by both); the GPU's energy counters in the
# metrics (NVML); the synthetic NVLink load DDP_LINK_LOAD_MB (its error with one GPU; with two, losses unchanged).
# SKIP (77) without a GPU.
. "$(dirname "$0")/lib.sh"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 77; fi
e2e_tmp gpu_step
# losses_close GPU.jsonl REF.jsonl RTOL LABEL: ten steps each, every GPU loss finite and within RTOL (relative)
# of the reference executor's; one ok or FAIL line
losses_close() {
  python3 - "$@" <<'PY' || fail=1
import json, math, sys
g = [json.loads(l) for l in open(sys.argv[1]) if '"step"' in l]
r = [json.loads(l) for l in open(sys.argv[2]) if '"step"' in l]
tol = float(sys.argv[3]); worst = 0.0
if not len(g) == len(r) == 10:
    print(f"FAIL: {sys.argv[4]}: {len(g)} GPU and {len(r)} reference steps, not 10"); sys.exit(1)
for a, b in zip(g, r):
    rel = abs(a["loss"] - b["loss"]) / abs(b["loss"])
    worst = max(worst, rel)
    if not math.isfinite(a["loss"]) or rel > tol:
        print(f"FAIL: {sys.argv[4]} step {a['step']}: gpu loss {a['loss']} ref {b['loss']} (rel {rel:.2e} > {tol})"); sys.exit(1)
print(f"ok: {sys.argv[4]}: 10 steps, losses {g[0]['loss']:.6f} .. {g[-1]['loss']:.6f}, max rel diff gpu/ref {worst:.2e} (tol {tol})")
PY
}
run_pair() { # NAME SCHEDULE RTOL [--set ...]
  local name=$1 sched=$2 rtol=$3; shift 3
  "$DDPC" "$DDP_SOURCE_DIR/schedules/$sched.lua" -o "$tmp/$name.bin" -q "$@" || { fail "$name compile"; return; }
  "$DDPRUN" "$tmp/$name.bin" --device cuda --steps 10 --metrics "$tmp/$name.gpu.jsonl" --checkpoint-dir "$tmp/$name.gpu" --quiet ||
    { fail "$name on the GPU"; return; }
  "$DDPRUN" "$tmp/$name.bin" --device ref --steps 10 --metrics "$tmp/$name.ref.jsonl" --checkpoint-dir "$tmp/$name.ref" --quiet ||
    { fail "$name on the reference executor"; return; }
  losses_close "$tmp/$name.gpu.jsonl" "$tmp/$name.ref.jsonl" "$rtol" "$name"
  # each executor continues from the other's checkpoint
  "$DDPRUN" "$tmp/$name.bin" --device ref --steps 11 --checkpoint-dir "$tmp/$name.gpu" --resume --quiet ||
    fail "$name: the reference executor cannot resume the GPU's checkpoint"
  "$DDPRUN" "$tmp/$name.bin" --device cuda --steps 11 --checkpoint-dir "$tmp/$name.ref" --resume --quiet ||
    fail "$name: the GPU cannot resume the reference executor's checkpoint"
}
run_pair tiny_fp32 tiny 1e-5
# the GPU's energy counters (NVML) in the metrics: the run line names the power limit; every step's
# energy_total_J and power_capped_total_ms are numbers that never decrease; over 2000 steps (about 1 s: the
# counter moves about every 100 ms, and steps this short, shorter than their issue, open no read window, so
# the sampler reads every 0.25 s) the mean power is plausible; and the host's loop is no slower than with
# DDP_ENERGY=0 (no counters; the sampler keeps NVML's milliseconds off the step's path)
"$DDPRUN" "$tmp/tiny_fp32.bin" --device cuda --steps 2000 --metrics "$tmp/energy.jsonl" --quiet || fail "energy run"
DDP_ENERGY=0 "$DDPRUN" "$tmp/tiny_fp32.bin" --device cuda --steps 2000 --metrics "$tmp/energy0.jsonl" --quiet ||
  fail "DDP_ENERGY=0 run"
python3 - "$tmp/energy.jsonl" "$tmp/energy0.jsonl" <<'PY' || fail=1
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
run = next(l for l in lines if l.get("event") == "run")
steps = [l for l in lines if "step" in l]
num = lambda v: isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
bad = [s["step"] for s in steps if not (num(s.get("energy_total_J")) and num(s.get("power_capped_total_ms")))]
back = [b["step"] for a, b in zip(steps, steps[1:]) if not bad and b["energy_total_J"] < a["energy_total_J"]]
watts = steps[-1].get("power_W")
host = sorted(s["host_ms"] for s in steps[1:])[len(steps) // 2]
off = [json.loads(l) for l in open(sys.argv[2])]
host0 = sorted(s["host_ms"] for s in off if "step" in s)[len(steps) // 2]
off_run = next(l for l in off if l.get("event") == "run")
if (not run.get("power", "").startswith("NVML") or bad or back or not num(watts) or not 20 <= watts <= 2000 or
        host > host0 + 0.2 or off_run.get("power") != "not measured: DDP_ENERGY=0" or off[-1].get("energy_total_J") is not None):
    print(f"FAIL: energy metrics: power {run.get('power')!r}, steps without energy {bad[:5]}, decreasing at {back[:5]}, "
          f"{watts} W, host {host:.3f} ms a step against {host0:.3f} without counters ({off_run.get('power')!r})"); sys.exit(1)
print(f"ok: energy metrics: {run['power']}; {steps[-1]['energy_total_J']:.3f} J over {len(steps)} steps, {watts:.0f} W, "
      f"power-capped {steps[-1]['power_capped_total_ms']:.1f} ms; host {host:.3f} ms a step, {host0:.3f} with DDP_ENERGY=0")
PY
# DDP_LINK_LOAD_MB (experiments, runtime/cuda/link_load.c): with one GPU visible, one line naming the knob
# and exit 1; with two, the load runs beside the step (eager and as a CUDA graph), every step's load is
# issued or counted, and the losses are bit for bit the run's without it
one=$(CUDA_VISIBLE_DEVICES=0 DDP_LINK_LOAD_MB=64 "$DDPRUN" "$tmp/tiny_fp32.bin" --device cuda --steps 2 --quiet 2>&1)
rc=$?
if [ $rc = 1 ] && [ "$(printf '%s\n' "$one" | grep -c .)" = 1 ] && printf '%s' "$one" | grep -q "DDP_LINK_LOAD_MB=64 needs a second visible GPU"; then
  echo "ok: DDP_LINK_LOAD_MB with one GPU: $one"
else
  fail "DDP_LINK_LOAD_MB with one GPU: rc $rc, not one line naming the knob: $one"
fi
# link_same LABEL NAME REGEX...: $tmp/NAME.err reports the load (every extended REGEX matches) and the losses of
# $tmp/NAME.jsonl are tiny_fp32's GPU run's without the load, bit for bit
link_same() {
  local label=$1 name=$2 re
  shift 2
  for re in "$@"; do
    grep -Eq "$re" "$tmp/$name.err" || { fail "$label: no load reported ($re): $(tail -2 "$tmp/$name.err")"; return; }
  done
  if [ "$(grep -o '"loss": [^,]*' "$tmp/$name.jsonl")" != "$(grep -o '"loss": [^,]*' "$tmp/tiny_fp32.gpu.jsonl")" ]; then
    fail "$label: the losses differ from the run without the load"
  else
    echo "ok: $label, losses bit for bit: $(grep 'steps pulled' "$tmp/$name.err")"
  fi
}
if [ "$(nvidia-smi -L | grep -c '^GPU')" -ge 2 ]; then
  for g in 0 1; do
    CUDA_VISIBLE_DEVICES=0,1 DDP_CUDA_GRAPH=$g DDP_LINK_LOAD_MB=300 "$DDPRUN" "$tmp/tiny_fp32.bin" --device cuda --steps 10 \
      --metrics "$tmp/link$g.jsonl" --quiet 2>"$tmp/link$g.err" || fail "DDP_LINK_LOAD_MB=300 (graph $g): $(tail -1 "$tmp/link$g.err")"
    link_same "DDP_LINK_LOAD_MB=300 beside 10 steps (graph $g)" link$g "[0-9]+ of 10 steps pulled 300 MiB each; [0-9]+ skipped"
  done
  # DDP_LINK_LOAD_DIR: two processes, each pulling the other's chunk by CUDA IPC
  mkdir -p "$tmp/share"
  for g in 0 1; do
    DDP_LINK_LOAD_DIR="$tmp/share" CUDA_VISIBLE_DEVICES=$g,$((1 - g)) DDP_LINK_LOAD_MB=300 "$DDPRUN" "$tmp/tiny_fp32.bin" \
      --device cuda --steps 10 --metrics "$tmp/ipc$g.jsonl" --quiet 2>"$tmp/ipc$g.err" &
    eval "ipc_pid$g=\$!"
  done
  wait "$ipc_pid0"; r0=$?; wait "$ipc_pid1"; r1=$?
  [ $r0 = 0 ] && [ $r1 = 0 ] || fail "DDP_LINK_LOAD_DIR: rc $r0 / $r1: $(tail -1 "$tmp/ipc0.err") | $(tail -1 "$tmp/ipc1.err")"
  for g in 0 1; do
    link_same "DDP_LINK_LOAD_DIR (GPU $g pulls from the other process by CUDA IPC)" ipc$g \
      "the other process's memory, by CUDA IPC" "of 10 steps pulled 300 MiB each"
  done
else
  echo "skip: DDP_LINK_LOAD_MB with two GPUs (one visible)"
fi
run_pair tiny_bf16 tiny 2e-2 --set precision=bf16
# bf16 gradients on one GPU: the dW GEMMs write bf16, the update reads them (PyTorch autocast's rounding)
run_pair tiny_bf16_grad16 tiny 2e-2 --set precision=bf16 --set grad_dtype=bf16
# one head of 64: the Hopper attention forward (templates/attention_wgmma.cu) inside a whole step
run_pair tiny_bf16_d64 tiny 2e-2 --set precision=bf16 --set model.heads=1
# ... with the fused attention backward (ATTN_BWD_FUSED: dK, dV and dQ in one kernel, dQ summed in f32)
run_pair tiny_bf16_d64_fused_bwd tiny 2e-2 --set precision=bf16 --set model.heads=1 --set fusion.attention_backward=true
run_pair toy toy 1e-5
run_pair toy_tied toy_tied 1e-5
run_pair toy_layernorm toy_layernorm 1e-5
# The ZeRO levels on one GPU (NCCL with one rank: the gathers, reduce-scatters and shard updates all run)
run_pair zero1_1gpu tiny_ddp 1e-5 --set parallel.ranks=1 --set parallel.shard=zero1
run_pair zero2_1gpu tiny_zero2 1e-5 --set parallel.ranks=1
# ... with the shard updates on the update stream during the backward and the all-gathers before the next forward
run_pair zero2_overlap_1gpu tiny_zero2 1e-5 --set parallel.ranks=1 --set parallel.optimizer_overlap=true \
  --set parallel.param_gather=before_forward
# graph_same NAME: run_pair NAME's plan replayed as CUDA graphs (DDP_CUDA_GRAPH=1, every stream captured
# together; the executor must say it captured some) gives the eager GPU run's losses and gradient norms, bit
# for bit
graph_same() {
  local name=$1
  [ -f "$tmp/$name.gpu.jsonl" ] || return 0
  DDP_CUDA_GRAPH=1 "$DDPRUN" "$tmp/$name.bin" --device cuda --steps 10 --metrics "$tmp/${name}_graph.jsonl" \
    --quiet 2>"$tmp/${name}_graph.err" || { fail "$name under DDP_CUDA_GRAPH=1: $(tail -1 "$tmp/${name}_graph.err")"; return; }
  grep -qE "step program as [1-9][0-9]* CUDA graphs? covering [1-9]" "$tmp/${name}_graph.err" ||
    { fail "$name under DDP_CUDA_GRAPH=1 captured nothing: $(grep -m1 covering "$tmp/${name}_graph.err")"; return; }
  python3 - "$tmp/${name}_graph.jsonl" "$tmp/$name.gpu.jsonl" "$name" <<'PY' || fail=1
import json, sys
a, b = ([(d["step"], d["loss"], d.get("grad_norm")) for d in map(json.loads, open(p)) if "step" in d and "loss" in d]
        for p in sys.argv[1:3])
if len(a) != 10 or a != b:
    print(f"FAIL: {sys.argv[3]}_graph: graph {a} != eager {b}"); sys.exit(1)
print(f"ok: {sys.argv[3]}_graph: 10 steps under DDP_CUDA_GRAPH=1 bit for bit the eager run's (loss {a[-1][1]:.6f})")
PY
}
# ... and that plan replayed as CUDA graphs (the compute, communication and update streams captured together)
graph_same zero2_overlap_1gpu
# The update streams' priorities (streams = {...}): one rank's side stream with the optimizer overlapped (no
# clipping) at low priority (single()'s default), at equal priority, with half the groups on the high
# second side stream (update_tail); ZeRO-2's update stream at low priority
run_pair tiny_update_low tiny 1e-5 --set optimizer.clip=nil
run_pair tiny_update_equal tiny 1e-5 --set optimizer.clip=nil --set streams.update_priority=equal
run_pair tiny_update_tail tiny 1e-5 --set optimizer.clip=nil --set streams.update_priority=low \
  --set streams.update_tail=0.5
graph_same tiny_update_tail
run_pair zero2_overlap_low_1gpu tiny_zero2 1e-5 --set parallel.ranks=1 --set parallel.optimizer_overlap=true \
  --set streams.update_priority=low
# The SM-partition experiments (DDP_SIDE_SMS: the update streams in a green context of 16 SMs; with
# DDP_GEMM_SM_TARGET the backward's GEMMs sized by cuBLASLt for the SMs left): the same losses as the
# reference executor, and the executor says it made the partition
env_pair() { # NAME RTOL ENV...: run_pair NAME's plan on the GPU under ENV against its reference run
  local name=$1 rtol=$2; shift 2
  [ -f "$tmp/$name.ref.jsonl" ] || return 0
  env "$@" "$DDPRUN" "$tmp/$name.bin" --device cuda --steps 10 --metrics "$tmp/${name}_env.jsonl" --quiet \
    2>"$tmp/${name}_env.err" || { fail "$name under $*: $(tail -1 "$tmp/${name}_env.err")"; return; }
  grep -q "DDP_SIDE_SMS: streams mask 0x[0-9a-f]* on [1-9][0-9]* SMs" "$tmp/${name}_env.err" ||
    { fail "$name under $*: no partition reported: $(head -1 "$tmp/${name}_env.err")"; return; }
  losses_close "$tmp/${name}_env.jsonl" "$tmp/$name.ref.jsonl" "$rtol" "$name ($*)"
}
env_pair tiny_update_tail 1e-5 DDP_SIDE_SMS=16 DDP_SIDE_STREAMS=2 DDP_GEMM_SM_TARGET=100
env_pair zero2_overlap_1gpu 1e-5 DDP_SIDE_SMS=16
run_pair fsdp_1gpu tiny_fsdp 1e-5 --set parallel.ranks=1
run_pair fsdp_bf16_1gpu tiny_fsdp 2e-2 --set parallel.ranks=1 --set precision=bf16
run_pair fsdp_bf16_gather32_1gpu tiny_fsdp 2e-2 --set parallel.ranks=1 --set precision=bf16 --set parallel.gather_dtype=fp32
# Plans that do not train (mode = "forward" / "forward_backward"): no checkpoints, losses only.
run_mode() { # NAME SCHEDULE RTOL MODE [--set ...]
  local name=$1 sched=$2 rtol=$3 mode=$4; shift 4
  "$DDPC" "$DDP_SOURCE_DIR/schedules/$sched.lua" -o "$tmp/$name.bin" -q --set mode=$mode "$@" || { fail "$name compile"; return; }
  "$DDPRUN" "$tmp/$name.bin" --device cuda --steps 3 --metrics "$tmp/$name.gpu.jsonl" --quiet || { fail "$name on the GPU"; return; }
  "$DDPRUN" "$tmp/$name.bin" --device ref --steps 3 --metrics "$tmp/$name.ref.jsonl" --quiet || { fail "$name on ref"; return; }
  python3 - "$tmp/$name.gpu.jsonl" "$tmp/$name.ref.jsonl" "$rtol" "$name" <<'PY' || fail=1
import json, math, sys
g = [json.loads(l) for l in open(sys.argv[1]) if '"step"' in l]
r = [json.loads(l) for l in open(sys.argv[2]) if '"step"' in l]
tol = float(sys.argv[3]); assert len(g) == len(r) == 3, (len(g), len(r))
worst = max(abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(g, r))
if not all(math.isfinite(a["loss"]) for a in g) or worst > tol:
    print(f"FAIL: {sys.argv[4]}: max rel diff gpu/ref {worst:.2e} > {tol}"); sys.exit(1)
print(f"ok: {sys.argv[4]}: 3 steps, loss {g[0]['loss']:.6f}, max rel diff gpu/ref {worst:.2e} (tol {tol})")
PY
}
run_mode tiny_forward tiny 1e-5 forward
run_mode tiny_bf16_forward_backward tiny 2e-2 forward_backward --set precision=bf16
exit $fail
