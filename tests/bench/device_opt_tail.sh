#!/usr/bin/env bash
# tests/bench/device_opt_tail.sh: the optimizer's tail after the backward on one GPU, by model size (after
# tests/bench/prepare_device.sh here; carry dev/). The end-to-end grid (device_grid.sh) showed the 2.7B
# steps ending with a 7.6-11 ms tail where XL's is 0.13 ms. For each SIZES x CONTEXTS: the default plan,
# update_tail 0 and 0.5, update_priority "equal", the optimizer after the backward (its own time) and one
# traced run of the default (--trace; tests/bench/tail_summary.py reads where the updates ran). ROUNDS
# (default 2) alternates the variants. Logs in $OUT/opt_tail.tgz; the table last.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
SIZES=${SIZES:-"2.7b xl"}; CONTEXTS=${CONTEXTS:-512}; ROUNDS=${ROUNDS:-2}; STEPS=${STEPS:-20}
VARIANTS=${VARIANTS:-"default tail0 tail50 equal serial"}
cp schedules/lib/models.lua $P/
opts() { case $1 in
  default) ;; tail0) echo "--set streams.update_tail=0" ;; tail50) echo "--set streams.update_tail=0.5" ;;
  equal) echo "--set streams.update_priority=equal" ;; serial) echo "--set parallel.optimizer_overlap=false" ;;
  *) echo "unknown variant $1" >&2; return 1 ;;
esac; }
for size in $SIZES; do
  sed "s/models.transformer(\"xl\"/models.transformer(\"$size\"/" schedules/bench_xl.lua >$P/$size.lua
  for ctx in $CONTEXTS; do for v in $VARIANTS; do
    $DDPC $P/$size.lua -o $P/${size}_${ctx}_$v.bin -q --set model.context=$ctx $(opts $v) || echo "compile ${size}_${ctx}_$v failed"
  done; done
done
for r in $(seq 1 $ROUNDS); do
  for size in $SIZES; do for ctx in $CONTEXTS; do for v in $VARIANTS; do
    n=${size}_${ctx}_$v
    timeout 120 $DDPRUN $P/$n.bin --steps $STEPS --metrics $L/$n.r$r.jsonl --quiet >$L/$n.r$r.log 2>&1 || echo "$n round $r: $(tail -1 $L/$n.r$r.log)"
  done; done; done
done
for size in $SIZES; do for ctx in $CONTEXTS; do
  n=${size}_${ctx}_default
  timeout 120 $DDPRUN $P/$n.bin --steps 8 --trace $L/trace_$n.json --quiet >$L/trace_$n.log 2>&1 || echo "trace $n: $(tail -1 $L/trace_$n.log)"
  python3 $B/tail_summary.py $L/trace_$n.json >$L/tail_$n.txt 2>&1; echo "== $n trace"; cat $L/tail_$n.txt
done; done
tar czf $OUT/opt_tail.tgz -C $L .
python3 $B/summary_opt_tail.py $L "$SIZES" "$CONTEXTS" "$VARIANTS" $ROUNDS | tee $OUT/table.txt
