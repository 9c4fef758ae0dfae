#!/usr/bin/env bash
# tests/bench/device_grid.sh: the single-GPU benchmark call (after tests/bench/prepare_device.sh here;
# carry dev/). (1) AdamW kernel shapes on the XL step; the fastest is used for the rest of the call and
# printed (its DDP_TUNE_ADAMW_* variables). (2) The headline: XL bf16 ctx 512 batch 4, 5 warm-up + 15
# timed steps, next to PyTorch eager and torch.compile. (3) The end-to-end grid: every size at context
# 128/256/512/1024 batch 4 and context 128 batch 16, bf16, as a training plan (3 warm-up + 7 timed steps;
# forward and backward from the step's timing points) and as a forward-only plan (mode=forward: forward
# time and forward-only memory); fp32 at context 512. (4) PyTorch eager at the grid points of context 512
# and of XL. Logs go to $OUT/grid.tar.gz; the tables are printed by tests/bench/grid_summary.py.
# Parts can be chosen: GRID_ADAMW=0 and GRID_HEADLINE=0 skip (1) and (2); GRID_SIZES="2.7b" and
# GRID_TORCH="xl:128:4 ..." (size:context:batch) narrow (3) and (4); GRID_FORWARD=0 skips the forward-only
# plans, GRID_FP32=0 the fp32 ones and GRID_TORCH=none the PyTorch grid; GRID_CONFIGS="ctx:batch ..."
# replaces the contexts and batches (default "128:4 256:4 512:4 1024:4 128:16"). GRID_COMPILE_ONLY=1 only
# compiles the grid's plans (here, to warm dev/cache after prepare_device.sh: the grid's shapes are not among
# its plans). Against an earlier
# call's logs: tests/bench/grid_compare.py OLD NEW. GRID_BUDGET (s, default 470) stops the grid early.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
grid_plans() { # compiles every grid plan into $P (fast from a warm cache)
  local size cfg ctx gb tag
  for size in ${GRID_SIZES:-small medium large xl 2.7b}; do
    sed "s/models.transformer(\"xl\"/models.transformer(\"$size\"/" schedules/bench_xl.lua >$P/$size.lua
    cp schedules/lib/models.lua $P/ 2>/dev/null
    for cfg in ${GRID_CONFIGS:-128:4 256:4 512:4 1024:4 128:16}; do
      ctx=${cfg%:*}; gb=${cfg#*:}; tag=${size}_bf16_${ctx}_${gb}
      $DDPC $P/$size.lua -o $P/$tag.bin -q --set model.context=$ctx --set data.global_batch=$gb --set warmup=3 ||
        echo "compile $tag failed"
      [ "${GRID_FORWARD:-1}" = 1 ] && { $DDPC $P/$size.lua -o $P/fwd_$tag.bin -q --set model.context=$ctx \
        --set data.global_batch=$gb --set warmup=2 --set mode=forward || echo "compile fwd_$tag failed"; }
    done
    [ "${GRID_FP32:-1}" = 1 ] && { $DDPC $P/$size.lua -o $P/${size}_fp32_512_4.bin -q --set precision=fp32 --set warmup=2 ||
      echo "compile ${size}_fp32 failed"; }
  done
}
if [ "${GRID_COMPILE_ONLY:-0}" = 1 ]; then grid_plans; exit 0; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
. $B/adamw_variants.sh
T0=$(date +%s); guard() { [ $(( $(date +%s) - T0 )) -lt $1 ]; } # skip what would overrun the call's limit

echo "== AdamW variants on XL ($(date +%T))"
best=default; best_ms=1e9
[ "${GRID_ADAMW:-1}" = 1 ] && for v in "${ADAMW_VARIANTS[@]}"; do
  n=${v%%:*}
  env ${v#*:} $DDPC schedules/bench_xl.lua -o $P/xl_adamw_$n.bin -q --set warmup=3 || continue
  $DDPRUN $P/xl_adamw_$n.bin --steps 10 --metrics $L/adamw_$n.jsonl --quiet >/dev/null 2>&1 || { echo "$n failed"; continue; }
  ms=$(python3 -c "
import json,sys,statistics
r=[json.loads(l) for l in open(sys.argv[1]) if '\"step\"' in l and '\"warmup\": false' in l]
print('%.3f' % statistics.median(x['optimizer_ms'] for x in r))" $L/adamw_$n.jsonl)
  echo "adamw $n (${v#*:}): optimizer median $ms ms, loss at step 10 $(tail -1 $L/adamw_$n.jsonl | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["loss"])')"
  if python3 -c "import sys; sys.exit(0 if $ms < $best_ms else 1)"; then best=$n; best_ms=$ms; fi
done
echo "chosen AdamW variant: $best ($(adamw_env $best))"
[ -n "$(adamw_env $best)" ] && export $(adamw_env $best); echo "$best $(adamw_env $best)" >$L/adamw_chosen.txt
[ "${GRID_ADAMW:-1}" = 1 ] && for op in ADAMW REDUCE_ROWS; do # the chosen shape (the variables reach gpu_kernels' launch rules) and the new fold
  timeout 120 dev/bin/gpu_kernels --op $op >$L/gpu_kernels_$op.log 2>&1; echo "gpu_kernels --op $op rc=$?: $(tail -1 $L/gpu_kernels_$op.log)"
done

if [ "${GRID_HEADLINE:-1}" = 1 ]; then
  echo "== headline: XL bf16 ctx 512 batch 4 ($(date +%T))"
  $DDPC schedules/bench_xl.lua -o $P/xl.bin -q
  $DDPRUN $P/xl.bin --metrics $L/headline_xl.jsonl --quiet >$L/headline_xl.log 2>&1 || tail -2 $L/headline_xl.log
  timeout 120 python3 $A --size xl --warmup 3 --iters 10 >$L/torch_eager_xl_512_4.log 2>&1; echo "torch eager rc=$?"
  timeout 240 python3 $A --size xl --warmup 3 --iters 10 --compile >$L/torch_compile_xl_512_4.log 2>&1; echo "torch.compile rc=$?"
fi

echo "== grid, ours ($(date +%T))"
grid_plans
for size in ${GRID_SIZES:-small medium large xl 2.7b}; do
  for cfg in ${GRID_CONFIGS:-128:4 256:4 512:4 1024:4 128:16}; do
    guard ${GRID_BUDGET:-470} || { echo "out of time: grid stops before $size $cfg"; break 2; }
    ctx=${cfg%:*}; gb=${cfg#*:}; tag=${size}_bf16_${ctx}_${gb}
    [ -f $P/$tag.bin ] && timeout 120 $DDPRUN $P/$tag.bin --steps 10 --metrics $L/grid_train_$tag.jsonl --quiet >$L/grid_train_$tag.log 2>&1 ||
      echo "train $tag: $(tail -1 $L/grid_train_$tag.log)"
    [ -f $P/fwd_$tag.bin ] && { timeout 60 $DDPRUN $P/fwd_$tag.bin --steps 7 --metrics $L/grid_forward_$tag.jsonl --quiet >$L/grid_forward_$tag.log 2>&1 ||
      echo "forward $tag: $(tail -1 $L/grid_forward_$tag.log)"; }
  done
  guard ${GRID_BUDGET:-470} || break
  tag=${size}_fp32_512_4
  if [ "${GRID_FP32:-1}" = 1 ] && [ -f $P/$tag.bin ]; then
    timeout 60 $DDPRUN $P/$tag.bin --steps 4 --metrics $L/grid_train_$tag.jsonl --quiet >$L/grid_train_$tag.log 2>&1 ||
      echo "train $tag: $(tail -1 $L/grid_train_$tag.log)"
  fi
done

echo "== grid, PyTorch eager ($(date +%T))"
[ "${GRID_TORCH:-}" = none ] && GRID_TORCH=" "
for pt in ${GRID_TORCH:-small:512:4 medium:512:4 large:512:4 2.7b:512:4 xl:128:4 xl:256:4 xl:1024:4 xl:128:16}; do
  guard 540 || { echo "out of time: PyTorch grid stops before $pt"; break; }
  IFS=: read size ctx b <<<"$pt"
  timeout 60 python3 $A --size $size --ctx $ctx --batch $b --warmup 2 --iters 5 >$L/torch_eager_${size}_${ctx}_${b}.log 2>&1 ||
    echo "torch $pt rc=$?"
done
tar czf $OUT/grid.tar.gz -C $L . && ls -la $OUT
python3 $B/grid_summary.py $L
echo "== done ($(date +%T))"
