#!/usr/bin/env bash
# tests/bench/pipeline_2gpu.sh: the pipeline benchmark on two GPUs, in one call (after
# tests/bench/prepare_device.sh here; carry dev/; it builds nothing): the XL model as 2 stages x 1 replica
# under ddprun --nproc 2 with --metrics and --trace for the schedules sequential, GPipe, 1F1B, interleaved
# (2 virtual stages) and zero bubble, each with 4, 8 and 16 microbatches (schedules/pipeline_gpipe.lua and
# pipeline_1f1b.lua, the other schedules through ddpc --set parallel.schedule=...), the bucketed DDP
# schedule on one GPU (the 1-worker point of the throughput plot), then PyTorch
# (tests/bench/torch_pipeline.py under torchrun: ScheduleGPipe and Schedule1F1B with the same microbatches
# and the same batch) in the same call. Per run ddpc plot timeline draws the traced step
# ($OUT/timeline_<name>.svg) and reports the bubble; then the split and throughput plots; logs in
# $OUT/pipeline.tar.gz (the traces of 1F1B with 8 microbatches in pipeline_trace_1f1b_m8.tar.gz); the table last
# (tests/bench/summary_pipeline.py). Messages move by NCCL send/recv (DDP_P2P_COPY=0); COPY_RUNS (names,
# e.g. "interleaved_m8 1f1b_m16") runs those plans again with copy-engine copies as <name>_copy. A schedule or an override this
# tree lacks is reported and skipped. Environment: SCHEDS (default "sequential gpipe 1f1b interleaved
# zero_bubble"), MBS (default "4 8 16"), STEPS (default 14), TORCH (default 1; 0 skips PyTorch), BIG (schedules
# also run with 16 microbatches of 4 sequences, global batch 64, named <schedule>_m16_b64; default none),
# SINGLE16 (1: the one-GPU point also at global batch 16, single_b16), ACCUM (1: one GPU at BIG's global
# batch with gradient accumulation over the same 16 microbatches of 4, pipeline stages = 1:
# single_accum_m16_b64, the same-batch baseline of the BIG runs). Per traced run the order each worker
# ran (tests/bench/pipe_ranges.py) goes to pipe_<name>.ranges.txt.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
T0=$(date +%s); guard() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
STEPS=${STEPS:-14}
SCHEDS=${SCHEDS:-"sequential gpipe 1f1b interleaved zero_bubble"}
MBS=${MBS:-"4 8 16"}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $L/gpu.txt
rm -f $L/pipe_*
P=$P/pipeline; rm -rf $P; mkdir -p $P # this script's plans only

# compile NAME SCHEDULE [--set ...]: $P/NAME.bin and its prediction (ddpc explain --json), or a pipe_NAME.log
# saying why not
compile() {
  local name=$1 s=$2; shift 2
  [ -f "$s" ] || { echo "$s is not in this tree" >$L/pipe_$name.log; echo "skip $name: no $s"; return 1; }
  "$DDPC" "$s" -o $P/$name.bin -q "$@" >$L/pipe_$name.log 2>&1 || { echo "skip $name: $(tail -1 $L/pipe_$name.log)"; return 1; }
  "$DDPC" explain $P/$name.bin --json >$L/pipe_$name.explain.json 2>>$L/pipe_$name.log || rm -f $L/pipe_$name.explain.json
}
# run NAME NPROC: ddprun of $P/NAME.bin into pipe_NAME.jsonl and, on 2 ranks, the traces and the timeline
run() {
  guard 400 || { echo "out of time before $1" | tee -a $L/pipe_$1.log; return; }
  local launch=(--nproc 2) trace=(--trace $L/pipe_$1.trace.json) envs=(DDP_P2P_COPY=0)
  [ "$2" = 1 ] && launch=() trace=()
  case $1 in *_copy) envs=(DDP_P2P_COPY=1) ;; esac
  env "${envs[@]}" timeout 90 $DDPRUN $P/$1.bin "${launch[@]}" --steps $STEPS --metrics $L/pipe_$1.jsonl "${trace[@]}" --quiet \
    >>$L/pipe_$1.log 2>&1 || { echo "$1 failed: $(tail -1 $L/pipe_$1.log)"; rm -f $L/pipe_$1.jsonl; return; }
  [ "$2" = 1 ] && return
  $DDPC plot timeline -o $OUT/timeline_$1.svg $L/pipe_$1.trace.rank0.json $L/pipe_$1.trace.rank1.json \
    >$L/pipe_$1.timeline.jsonl 2>>$L/pipe_$1.log || echo "$1: no timeline: $(tail -1 $L/pipe_$1.log)"
  python3 $B/pipe_ranges.py $L/pipe_$1.trace.rank0.json $L/pipe_$1.trace.rank1.json >$L/pipe_$1.ranges.txt 2>&1
}

echo "== compile ($(date +%T))"
compile single_bucketed_10mb schedules/bucketed_10mb.lua --set parallel.ranks=1
[ "${ACCUM:-0}" = 1 ] && compile single_accum_m16_b64 schedules/pipeline_1f1b.lua --set parallel.stages=1 \
  --set parallel.microbatches=16 --set data.global_batch=64
[ "${SINGLE16:-0}" = 1 ] && compile single_b16 schedules/bucketed_10mb.lua --set parallel.ranks=1 --set data.global_batch=16
for s in ${BIG:-}; do
  compile ${s}_m16_b64 schedules/pipeline_1f1b.lua --set parallel.microbatches=16 --set parallel.schedule=$s \
    --set data.global_batch=64
done
for s in $SCHEDS; do
  for m in $MBS; do
    case $s in
      gpipe) compile ${s}_m$m schedules/pipeline_gpipe.lua --set parallel.microbatches=$m ;;
      1f1b) compile ${s}_m$m schedules/pipeline_1f1b.lua --set parallel.microbatches=$m ;;
      interleaved) compile ${s}_m$m schedules/pipeline_1f1b.lua --set parallel.microbatches=$m \
        --set parallel.schedule=interleaved --set parallel.virtual_stages=2 ;;
      sequential) [ "$m" = "$(echo $MBS | cut -d' ' -f1)" ] && # one microbatch: model parallelism, compiled once
        compile ${s}_m1 schedules/pipeline_1f1b.lua --set parallel.microbatches=1 --set parallel.schedule=sequential ;;
      *) compile ${s}_m$m schedules/pipeline_1f1b.lua --set parallel.microbatches=$m --set parallel.schedule=$s ;;
    esac
  done
done
for n in ${COPY_RUNS:-}; do # the same plans with their messages on the copy engines (DDP_P2P_COPY=1)
  [ -f $P/$n.bin ] && cp $P/$n.bin $P/${n}_copy.bin && cp $L/pipe_$n.log $L/pipe_${n}_copy.log &&
    { cp $L/pipe_$n.explain.json $L/pipe_${n}_copy.explain.json 2>/dev/null || true; }
done
echo "== ours ($(date +%T))"
for f in $P/*.bin; do
  [ -e "$f" ] || continue
  n=$(basename $f .bin)
  case $n in single_*) CUDA_VISIBLE_DEVICES=0 run $n 1 ;; *) run $n 2 ;; esac
done
echo "== plots ($(date +%T))"
m=$(ls $L/pipe_*_m8.jsonl 2>/dev/null)
[ -n "$m" ] && $DDPC plot split -o $OUT/pipeline_split.svg $m
t=$(ls $L/pipe_single_bucketed_10mb.jsonl $L/pipe_*_m8.jsonl 2>/dev/null)
labels=(); for f in $t; do labels+=(--label xl); done
[ -n "$t" ] && $DDPC plot throughput -o $OUT/pipeline_throughput.svg "${labels[@]}" $t
echo "== pytorch ($(date +%T))"
# the batch of our plans (the first run at global batch 16) (tokens per step / context 512), so PyTorch runs the same step
batch=$(python3 - $L <<'PY'
import glob, json, re, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/pipe_*_m*.jsonl")):
    if re.search(r"_b\d+\.jsonl$", f):
        continue
    run = next((json.loads(l) for l in open(f) if '"event": "run"' in l), None)
    if run and run.get("tokens_per_step"):
        print(int(run["tokens_per_step"]) // 512)
        break
else:
    print(16)
PY
)
mbs=$(echo $MBS | tr ' ' ,)
[ "${TORCH:-1}" = 1 ] && guard 450 && { timeout 150 torchrun --nproc_per_node=2 $B/torch_pipeline.py --batch $batch \
  --microbatches $mbs >$L/torch_pipeline.log 2>&1; echo "torch rc=$? (batch $batch)"; grep -E "^TORCH_PIPE .*error" $L/torch_pipeline.log; }
# the traces are large (every instruction of a step): only 1F1B with 8 microbatches' come back, on their own
tar czf $OUT/pipeline.tar.gz -C $L --exclude='pipe_*.trace.rank*.json' .
tr=$(cd $L && ls pipe_1f1b_m8.trace.rank*.json 2>/dev/null)
[ -n "$tr" ] && tar czf $OUT/pipeline_trace_1f1b_m8.tar.gz -C $L $tr
ls -la $OUT
echo "== summary ($(date +%T))"
python3 $B/summary_pipeline.py $L
