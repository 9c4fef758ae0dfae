#!/usr/bin/env bash
# tests/bench/device_side_sms.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/).
# The XL step (bf16, context 512, batch 4) with its updates in an SM partition of their own: the update
# stream in a CUDA green context of N SMs (DDP_SIDE_SMS, DDP_SIDE_STREAMS) and the backward's GEMMs sized by
# cuBLASLt for the SMs left (DDP_GEMM_SM_TARGET), against block-level sharing (the defaults: the update
# stream at low priority). VARIANTS: space-separated name:plan:ENV,ENV...; plans: base (the defaults),
# tail0 (update_tail 0: every update on the low stream), equal (equal priorities), serial (the optimizer
# after the backward). ROUNDS rounds, alternating, XL_STEPS steps each (default 20, 5 warm-up); GPU 0's
# clocks and power sampled meanwhile (clocks_start), averaged over each run's timed steps in the table.
# TRACE: variants traced once. XL_PLANS: more plans of bench_xl.lua, space-separated name:key=value,key=value
# (each key=value one --set), e.g. "g16:grad_dtype=bf16 g16_t10:grad_dtype=bf16,streams.update_tail=0.1".
# Logs in $OUT/logs.tgz; the table last (also $OUT/table.txt).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,power.default_limit,power.max_limit,clocks.max.sm \
  --format=csv | tee $OUT/gpu.txt
echo "== ceiling ($(date +%T))"
ceiling $L/torch_kernels.log
echo "== plans ($(date +%T))"
$DDPC schedules/bench_xl.lua -o $P/base.bin -q
$DDPC schedules/bench_xl.lua -o $P/tail0.bin -q --set streams.update_tail=0
$DDPC schedules/bench_xl.lua -o $P/equal.bin -q --set streams.update_priority=equal
$DDPC schedules/bench_xl.lua -o $P/serial.bin -q --set parallel.optimizer_overlap=false
for p in ${XL_PLANS:-}; do
  IFS=: read -r name sets <<<"$p"
  args=(); IFS=, read -ra kv <<<"$sets"
  for s in "${kv[@]}"; do args+=(--set "$s"); done
  $DDPC schedules/bench_xl.lua -o $P/$name.bin -q "${args[@]}" || echo "plan $name failed"
done
VARIANTS=${VARIANTS:-"default:base: side16:base:DDP_SIDE_SMS=16,DDP_SIDE_STREAMS=2 side16_t:base:DDP_SIDE_SMS=16,DDP_SIDE_STREAMS=2,DDP_GEMM_SM_TARGET=116 target116:base:DDP_GEMM_SM_TARGET=116 side8_t:base:DDP_SIDE_SMS=8,DDP_SIDE_STREAMS=2,DDP_GEMM_SM_TARGET=124 side24_t:base:DDP_SIDE_SMS=24,DDP_SIDE_STREAMS=2,DDP_GEMM_SM_TARGET=108 side16_t_both:base:DDP_SIDE_SMS=16,DDP_GEMM_SM_TARGET=116 side16_t_tail0:tail0:DDP_SIDE_SMS=16,DDP_GEMM_SM_TARGET=116 side16_t_equal:equal:DDP_SIDE_SMS=16,DDP_SIDE_STREAMS=2,DDP_GEMM_SM_TARGET=116"}
run_variant() { # name plan envs steps extra...
  local name=$1 plan=$2 envs=$3 steps=$4; shift 4
  env ${envs//,/ } timeout 150 $DDPRUN $P/$plan.bin --steps $steps "$@"
}
echo "== XL ($(date +%T))"
clocks_start $L/clocks.csv
for round in $(seq 1 "${ROUNDS:-2}"); do
  for v in $VARIANTS; do
    IFS=: read -r name plan envs <<<"$v"
    span ${name}_$round begin
    run_variant "$name" "$plan" "$envs" ${XL_STEPS:-20} $PEAK --metrics $L/xl_${name}_$round.jsonl --quiet \
      >$L/xl_${name}_$round.log 2>&1 || echo "$name failed: $(tail -2 $L/xl_${name}_$round.log)"
    span ${name}_$round end
  done
done
clocks_stop
grep -h "DDP_SIDE_SMS" $L/xl_*_1.log | sort -u | head -5
echo "== traces ($(date +%T))"
for v in ${TRACE:-}; do
  IFS=: read -r name plan envs <<<"$v"
  run_variant "$name" "$plan" "$envs" 3 --trace $L/trace_$name.json --quiet >/dev/null 2>&1 &&
    python3 $B/trace_summary.py $L/trace_$name.json >$L/trace_$name.txt 2>&1
  rm -f $L/trace_$name.json
done
xl_tail "${TRACE:-}" 0
