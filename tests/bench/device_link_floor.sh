#!/usr/bin/env bash
# tests/bench/device_link_floor.sh: what the bytes of a data-parallel step's all-reduce cost a step that has no
# collective, 2 x H200 (nvidia-h200-x2), one call, after tests/bench/prepare_device.sh here (carry dev/).
#  1. the copy engines' rate over NVLink: GPU 0 pulling from GPU 1 alone, then both GPUs pulling from each
#     other at once (two tests/bench/link_load.py processes, unpaced, LINK_SECONDS each, default 5);
#  2. ROUNDS rounds (default 2) of: the one-GPU XL step (schedules/bench_xl.lua, STEPS steps, default 30) on
#     GPU 0 and GPU 1 at once, under each load of LOADS (GB, 1e9 bytes, received per GPU per step; default
#     "0 0.001 4 8": none, 1 MiB, a 2-rank all-reduce of XL's bf16 gradients, of its fp32 ones). A load of G
#     is ddprun's own DDP_LINK_LOAD_MB (runtime/cuda/link_load.c): each step first queues G GB of copy-engine
#     copies on a low-priority stream of the same process, with no dependence on the step, from the other
#     process's GPU memory mapped by CUDA IPC (DDP_LINK_LOAD_DIR, a fresh folder per run), as a data-parallel
#     rank reads its peers'. "Gc": the same with the source allocated on the other GPU by the process itself
#     (a context there); "Gp": two link_load.py processes beside the steps, paced to G GB per STEP_GUESS_MS
#     (default 68) for the whole run ("0p": present, copying nothing). The last two show what a context on
#     the other GPU costs its step. Controls (DDP_LINK_LOAD_MODE): "Gm" sets the IPC source up and copies
#     nothing, "Gl" copies G GB within the GPU instead;
#  3. with DDP=1 (default), the best 2-rank plans of each gradient dtype, tests/bench/ddp_table.sh in the same
#     call (RUNS below, two rounds, STEPS steps), for the ratio the loads are set against.
# Files in $OUT: table.txt (tests/bench/summary_link_floor.py) and logs.tgz.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
D=$L/floor; mkdir -p $D
STEPS=${STEPS:-30}; ROUNDS=${ROUNDS:-2}; LOADS=${LOADS:-"0 0.001 4 8"}; GUESS=${STEP_GUESS_MS:-68}; LS=${LINK_SECONDS:-5}
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader | tee $D/gpu.txt
$DDPC schedules/bench_xl.lua -o $P/floor_single.bin -q || { echo "bench_xl.lua does not compile"; exit 1; }
echo "== the copy engines' rate ($(date +%T))"
python3 $B/link_load.py --gpu 0 --peer 1 --seconds $LS >$D/bw_one.log 2>&1; echo "one direction rc=$?"
python3 $B/link_load.py --gpu 0 --peer 1 --seconds $LS >$D/bw_both_0.log 2>&1 &
python3 $B/link_load.py --gpu 1 --peer 0 --seconds $LS >$D/bw_both_1.log 2>&1; wait
grep -h LINK_LOAD $D/bw_*.log
loads_start() { # a "Gp" load: two link_load.py processes (0p: present, idle)
  LOAD_PIDS=()
  case $1 in *p) ;; *) return 0 ;; esac
  local g how=(--idle)
  [ "$1" = 0p ] || how=(--gbps "$(python3 -c "print(${1%p} / ($GUESS * 1e-3))")")
  for g in 0 1; do
    python3 $B/link_load.py --gpu $g --peer $((1 - g)) "${how[@]}" --seconds 600 >$D/load_$1_g$g.r$2.log 2>&1 &
    LOAD_PIDS+=($!)
  done
  sleep 3 # the processes up and copying at their pace
}
loads_stop() { [ ${#LOAD_PIDS[@]} = 0 ] || { kill -TERM "${LOAD_PIDS[@]}"; wait "${LOAD_PIDS[@]}"; }; }
mib() { case $1 in *p) echo 0 ;; *) python3 -c "print(round(${1%[cml]} * 1e9 / 2**20))" ;; esac; } # GB -> DDP_LINK_LOAD_MB
mode() { case $1 in *m) echo 1 ;; *l) echo 2 ;; *) echo 0 ;; esac; } # -> DDP_LINK_LOAD_MODE
echo "== the one-GPU step under the loads ($(date +%T))"
for r in $(seq 1 $ROUNDS); do
  for ld in $LOADS; do
    loads_start $ld $r
    pids=(); share=$(mktemp -d); dir=(); case $ld in *c|*p) ;; *) dir=(DDP_LINK_LOAD_DIR=$share) ;; esac
    for g in 0 1; do
      env "${dir[@]}" CUDA_VISIBLE_DEVICES=$g,$((1 - g)) DDP_LINK_LOAD_MB=$(mib $ld) DDP_LINK_LOAD_MODE=$(mode $ld) timeout 150 $DDPRUN $P/floor_single.bin --steps $STEPS \
        --metrics $D/step_$ld.g$g.r$r.jsonl --quiet >$D/step_$ld.g$g.r$r.log 2>&1 &
      pids+=($!)
    done
    wait "${pids[@]}" # the two steps (the loads keep running)
    rm -rf "$share"
    loads_stop
    grep -h LINK_LOAD $D/load_${ld}_g*.r$r.log 2>/dev/null
    grep -h "DDP_LINK_LOAD_MB: " $D/step_$ld.g*.r$r.log 2>/dev/null
    for g in 0 1; do [ -s $D/step_$ld.g$g.r$r.jsonl ] || echo "load $ld GPU $g round $r failed: $(tail -1 $D/step_$ld.g$g.r$r.log)"; done
  done
done
if [ "${DDP:-1}" = 1 ]; then
  echo "== the 2-rank plans ($(date +%T))"
  NPROC=2 STEPS=$STEPS SINGLE_STEPS=$STEPS ROUNDS=2 TORCH=0 \
    RUNS=${RUNS:-"ddp100_bf16_ov_a2a_winz_low ddp100_fp32_ov_pcopy_low_tail10"} bash $B/ddp_table.sh >$D/ddp_table.log 2>&1
  echo "ddp_table rc=$?"; tail -12 $D/ddp_table.log
  cp -r $L/ddp_table $D/ 2>/dev/null
fi
tar czf $OUT/logs.tgz -C $L floor
echo "== table ($(date +%T))"
python3 $B/summary_link_floor.py $D | tee $OUT/table.txt
