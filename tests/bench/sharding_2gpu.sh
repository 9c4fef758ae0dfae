#!/usr/bin/env bash
# tests/bench/sharding_2gpu.sh: the sharding benchmark on two GPUs, in one call (after
# tests/bench/prepare_device.sh here; carry dev/; it builds nothing): the XL setup of
# schedules/lib/xl_ddp.lua under ddprun --nproc 2 for bucketed DDP (schedules/bucketed_10mb.lua), ZeRO-1,
# ZeRO-2 and FSDP (schedules/zero1.lua, zero2.lua, fsdp.lua; FSDP with prefetch 1 and 2 x reshard after
# forward true and false through ddpc --set), the DDP schedule on one GPU (for the throughput plot), then
# PyTorch (tests/bench/torch_fsdp.py under torchrun: DDP 25 MB buckets, FSDP2 reshard true and false) in the
# same call; logs in $OUT/sharding.tar.gz, the plots of ddpc plot in $OUT, the table last
# (tests/bench/summary_sharding.py). A schedule or an override this tree lacks is reported and skipped.
# The --set keys of the FSDP options (compiler/schedule.h's fields) can be renamed through the
# environment: FSDP_PREFETCH_KEYS (default "parallel.prefetch_forward parallel.prefetch_backward"),
# FSDP_RESHARD_KEY (default parallel.reshard_after_forward). STEPS (default 14, of which xl_ddp's first 5
# are warmup) sets the steps of our runs.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
T0=$(date +%s); guard() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
STEPS=${STEPS:-14}
PREFETCH_KEYS=${FSDP_PREFETCH_KEYS:-"parallel.prefetch_forward parallel.prefetch_backward"}
RESHARD_KEY=${FSDP_RESHARD_KEY:-parallel.reshard_after_forward}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
rm -f $L/shard_*
P=$P/sharding; rm -rf $P; mkdir -p $P # this script's plans only

# compile NAME SCHEDULE [--set ...]: $P/NAME.bin, or a shard_NAME.log saying why not
compile() {
  local name=$1 s=$2; shift 2
  [ -f "$s" ] || { echo "$s is not in this tree" >$L/shard_$name.log; echo "skip $name: no $s"; return 1; }
  "$DDPC" "$s" -o $P/$name.bin -q "$@" >$L/shard_$name.log 2>&1 || { echo "skip $name: $(tail -1 $L/shard_$name.log)"; return 1; }
}
# run NAME NPROC: ddprun of $P/NAME.bin into shard_NAME.jsonl
run() {
  guard 330 || { echo "out of time before $1" | tee -a $L/shard_$1.log; return; }
  local launch=(--nproc 2)
  [ "$2" = 1 ] && launch=()
  timeout 60 $DDPRUN $P/$1.bin "${launch[@]}" --steps $STEPS --metrics $L/shard_$1.jsonl --quiet >>$L/shard_$1.log 2>&1 ||
    { echo "$1 failed: $(tail -1 $L/shard_$1.log)"; rm -f $L/shard_$1.jsonl; }
}
sets() { # KEYS VALUE: --set KEY=VALUE for each key
  local k; for k in $1; do printf -- '--set\n%s=%s\n' "$k" "$2"; done
}

echo "== compile ($(date +%T))"
compile single_bucketed_10mb schedules/bucketed_10mb.lua --set parallel.ranks=1
compile ddp_bucketed_10mb schedules/bucketed_10mb.lua
compile zero1 schedules/zero1.lua
compile zero2 schedules/zero2.lua
for pf in 1 2; do
  for rs in true false; do
    mapfile -t over < <(sets "$PREFETCH_KEYS" $pf; sets "$RESHARD_KEY" $rs)
    compile fsdp_prefetch${pf}_reshard_$rs schedules/fsdp.lua "${over[@]}"
  done
done
echo "== ours ($(date +%T))"
for f in $P/*.bin; do
  n=$(basename $f .bin)
  case $n in single_*) CUDA_VISIBLE_DEVICES=0 run $n 1 ;; *) run $n 2 ;; esac
done
echo "== plots ($(date +%T))"
m=$(ls $L/shard_*.jsonl 2>/dev/null | grep -v single_)
[ -n "$m" ] && $DDPC plot split -o $OUT/sharding_split.svg $m
t=$(ls $L/shard_single_bucketed_10mb.jsonl $L/shard_ddp_bucketed_10mb.jsonl 2>/dev/null)
[ -n "$t" ] && $DDPC plot throughput -o $OUT/sharding_throughput.svg $t
echo "== pytorch ($(date +%T))"
guard 420 && { timeout 170 torchrun --nproc_per_node=2 $B/torch_fsdp.py --modes ddp,fsdp2 --reshard true,false \
  >$L/torch_fsdp.log 2>&1; echo "torch rc=$?"; grep -E "^TORCH_FSDP .*error" $L/torch_fsdp.log; }
tar czf $OUT/sharding.tar.gz -C $L . && ls -la $OUT
echo "== summary ($(date +%T))"
python3 $B/summary_sharding.py $L
