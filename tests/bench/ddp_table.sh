#!/usr/bin/env bash
# tests/bench/ddp_table.sh: the data-parallel table of XL on NPROC GPUs (default 2; 4 on nvidia-h200-x4), in
# one call, after tests/bench/prepare_device.sh here (carry dev/): our one-GPU step (schedules/bench_xl.lua,
# 4 sequences), then every plan below on NPROC ranks with 4 sequences each, ROUNDS times (default 2,
# interleaved; the table takes the median of the rounds' medians), then PyTorch DDP (torch_fsdp.py, 25 MB
# buckets) and, with TORCH_FSDP2=1, FSDP2 under torchrun in the same call. Plans (RUNS picks some):
#   ddp_fp32          bucketed 10 MB, fp32 gradients (schedules/bucketed_10mb.lua)
#   ddp_bf16          the same with bf16 gradients
#   ddp_fp32_ov, ddp_bf16_ov  the same with optimizer_overlap (each bucket's AdamW on the update stream during
#                     the backward, after its all-reduce)
#   ddp100_fp32, ddp100_fp32_ov, ddp100_bf16_ov  bucketed 100 MB (schedules/bucketed_100mb.lua), [the same
#                     with optimizer_overlap]; ddp50_fp32_ov, ddp25_fp32_ov  the same with 50 / 25 MB buckets
#   ddp100t_fp32_ov, ddp100t_bf16_ov  ddp100_*_ov with the gradients ready last (XL: block 0 and the
#                     embedding) in buckets of at most 16 MiB (schedules/bucketed_100mb_tail.lua)
#   zero1_flat        ZeRO-1 as schedules/zero1.lua (one reduce-scatter after the backward)
#   zero1_overlap     ZeRO-1 over 100 MB buckets, each group updated and all-gathered during the backward
#   zero1_overlap_bf16, zero1_overlap_25mb  the same with bf16 gradients, with 25 MB buckets
#   zero1_pgather, zero1_pgather_bf16, zero2_pgather_bf16  zero1_overlap (zero2_overlap) with
#                     param_gather = "before_forward": the all-gathers at the next step's start, under the forward
#   zero2             schedules/zero2.lua (100 MB buckets reduce-scattered in the backward, update after it)
#   zero2_overlap     zero2 with optimizer_overlap (update + all-gather per group during the backward)
#   zero2_overlap_bf16  the same with bf16 gradients
#   fsdp_overlap      schedules/fsdp.lua with optimizer_overlap
#   NAME_low          any of the above with streams = { update_priority = "low" } (the update stream at the
#                     device's lowest priority, the compute and communication streams at its highest)
#   NAME_eq           any of the above with streams = { update_priority = "equal" } (every stream alike)
#   NAME_low_tail     a ddp*_ov plan with streams = { update_priority = "low", update_tail = 0.25 } (the last quarter
#                     of the buckets' updates on a second update stream that keeps the high priority);
#                     NAME_low_tailP update_tail = P / 100 (e.g. _tail10: 0.1)
#   NAME_comm         any of the above run with DDP_STREAM_PRIORITY=2 (the streams that carry collectives
#                     at the device's highest priority, the compute and update streams at its lowest)
#   NAME_pb           a zero1/zero2 plan above with master_group = "per_bucket" (a group of the fp32-read
#                     parameters beside each bucket, the layout before 2026-11-27: twice the collectives);
#                     NAME_ml master_group = "last", the default since (kept for docs/results/s12/call5)
#   NAME_a2a          a ZeRO plan above with each reduce-scatter an all-to-all and a sum of the received
#                     chunks (nccl.reduce_scatter = "alltoall"; NCCL's copy engines with _winz); a ddp_* plan
#                     with each all-reduce an all-to-all, a sum and an all-gather (nccl.all_reduce = "alltoall")
#   NAME_peer         a ddp*_ov plan with no collective: each bucket's update reads every rank's gradient
#                     through CUDA IPC after a peer barrier (nccl.all_reduce = "peer"); NAME_pcopy the other
#                     ranks' bucket first pulled into a local buffer by the copy engines (nccl.all_reduce = "peer_copy")
#   NAME_mv           an _a2a plan (or a ZeRO plan) with its all-to-alls and all-gathers moved by each rank's own
#                     copy-engine pulls through CUDA IPC (nccl.movement = "peer_copy"; not with _win / _winz)
#   NAME_win          any of the above with its arenas NCCL symmetric windows (nccl.register = "window");
#                     NAME_winz the same with nccl.cta_policy = "zero" (NCCL's copy-engine all-gather)
#   NAME_sideN        any of the above run with its communication and update streams in a partition of N SMs
#                     of their own (DDP_SIDE_SMS=N) and the backward's GEMMs sized for the SMs left
#                     (DDP_GEMM_SM_TARGET = SMS - N, SMS the GPU's count, default 132); NAME_sideN_t0 the
#                     partition alone, the GEMMs sized for the whole GPU
#   NAME_allocM       any of the above run with DDP_NCCL_MEM_ARENAS=M (the arenas of bit mask M from
#                     ncclMemAlloc: 1 params, 2 grads, 4 optimizer, 8 activations, 16 workspace, 32 io)
#   NAME_each         a _mv or _pcopy plan run with DDP_PEER_COPY_BATCH=0 (one cudaMemcpyAsync per peer, not
#                     one batch per instruction)
# Suffixes combine in this order: NAME[_ml|_pb][_a2a|_peer|_pcopy][_mv][_win|_winz][_low[_tail]|_eq][_comm][_allocM][_each][_sideN[_t0]].
# The one-GPU step runs at the start of every round (SINGLE_ROUNDS=0: only the first) on each GPU of
# SINGLE_GPUS (default all N: single on GPU 0, single_gpuG on GPU G; the ratios are against GPU 0's, and the
# summary's line before the losses against the slowest GPU's, whose pace the ranks run at); SINGLE_STEPS its steps
# (default 20; with STEPS=200 both run long enough for the power limiter to settle).
# SINGLE_LOW=1 also runs the one-GPU step with the low-priority update stream (single_low).
# COMPILE_ONLY=1 only compiles the plans (here, to warm dev/cache for a rank count prepare_device.sh does not cover).
# STEPS (default 14: xl_ddp's 5 warm-up + 9 timed); TORCH=0 skips PyTorch. Logs in $OUT/ddp_table.tar.gz; the table last
# (tests/bench/summary_ddp_table.py).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
N=${NPROC:-2}; STEPS=${STEPS:-14}; ROUNDS=${ROUNDS:-2}
RUNS=${RUNS:-"ddp_fp32 ddp_bf16 zero1_flat zero1_overlap zero2 zero2_overlap zero2_overlap_bf16 fsdp_overlap"}
D=$L/ddp_table; rm -rf $D; mkdir -p $D
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $D/gpu.txt
W=(--set parallel.ranks=$N --set data.global_batch=$((4 * N)))
OV=(--set parallel.optimizer_overlap=true)
B100=(--set parallel.sync=bucketed --set parallel.bucket_mb=100 --set parallel.overlap=backward)
BF16=(--set parallel.grad_dtype=bf16)
PG=(--set parallel.param_gather=before_forward)
LOW=(--set streams.update_priority=low)
EQ=(--set streams.update_priority=equal)
core() { # NAME: the plan's name without the suffixes
  local b=${1%_side*}; b=${b%_each}; b=${b%_alloc*}; b=${b%_comm}; b=${b%_tail*}; b=${b%_low}; b=${b%_eq}; b=${b%_winz}; b=${b%_win}; b=${b%_mv}; b=${b%_a2a}; b=${b%_peer}; b=${b%_pcopy}; b=${b%_pb}; echo "${b%_ml}"
}
mods() { local c; c=$(core "$1"); echo "${1#"$c"}"; } # NAME: its suffixes, e.g. "_winz_low_side16"
plan() { # NAME SCHEDULE [--set ...]; _low adds LOW, _win / _winz the symmetric windows, _a2a the all-to-all
  local n=$1 s=$2; shift 2
  case $(mods $n) in *_low*) set -- "$@" "${LOW[@]}" ;; *_eq*) set -- "$@" "${EQ[@]}" ;; esac
  case $(mods $n) in
    *_tail[0-9]*) local p=${n##*_tail}; p=${p%%_*}; set -- "$@" --set streams.update_tail=0.$(printf '%02d' $p) ;;
    *_tail*) set -- "$@" --set streams.update_tail=0.25 ;;
  esac
  case $(mods $n) in *_a2a*)
    case $n in ddp*) set -- "$@" --set nccl.all_reduce=alltoall ;; *) set -- "$@" --set nccl.reduce_scatter=alltoall ;; esac ;;
  esac
  case $(mods $n) in *_peer*) set -- "$@" --set nccl.all_reduce=peer ;; *_pcopy*) set -- "$@" --set nccl.all_reduce=peer_copy ;; esac
  case $(mods $n) in *_mv*) set -- "$@" --set nccl.movement=peer_copy ;; esac
  case $(mods $n) in *_ml*) set -- "$@" --set parallel.master_group=last ;; *_pb*) set -- "$@" --set parallel.master_group=per_bucket ;; esac
  case $(mods $n) in
    *_winz*) set -- "$@" --set nccl.register=window --set nccl.cta_policy=zero ;;
    *_win*) set -- "$@" --set nccl.register=window ;;
  esac
  $DDPC $s -o $P/t_$n.bin -q "$@" >$D/$n.compile.log 2>&1 || { echo "$n does not compile: $(tail -1 $D/$n.compile.log)"; return 1; }
}
plan single schedules/bench_xl.lua
[ "${SINGLE_LOW:-0}" = 1 ] && plan single_low schedules/bench_xl.lua
for n in $RUNS; do
  case $(core $n) in
    ddp_fp32) plan $n schedules/bucketed_10mb.lua "${W[@]}" ;;
    ddp_bf16) plan $n schedules/bucketed_10mb.lua "${W[@]}" "${BF16[@]}" ;;
    ddp_fp32_ov) plan $n schedules/bucketed_10mb.lua "${W[@]}" "${OV[@]}" ;;
    ddp_bf16_ov) plan $n schedules/bucketed_10mb.lua "${W[@]}" "${OV[@]}" "${BF16[@]}" ;;
    ddp100_fp32) plan $n schedules/bucketed_100mb.lua "${W[@]}" ;;
    ddp100_fp32_ov) plan $n schedules/bucketed_100mb.lua "${W[@]}" "${OV[@]}" ;;
    ddp100_bf16_ov) plan $n schedules/bucketed_100mb.lua "${W[@]}" "${OV[@]}" "${BF16[@]}" ;;
    ddp100t_fp32_ov) plan $n schedules/bucketed_100mb_tail.lua "${W[@]}" "${OV[@]}" ;;
    ddp100t_bf16_ov) plan $n schedules/bucketed_100mb_tail.lua "${W[@]}" "${OV[@]}" "${BF16[@]}" ;;
    ddp50_fp32_ov) plan $n schedules/bucketed_100mb.lua "${W[@]}" "${OV[@]}" --set parallel.bucket_mb=50 ;;
    ddp25_fp32_ov) plan $n schedules/bucketed_100mb.lua "${W[@]}" "${OV[@]}" --set parallel.bucket_mb=25 ;;
    zero1_flat) plan $n schedules/zero1.lua "${W[@]}" ;;
    zero1_overlap) plan $n schedules/zero1.lua "${W[@]}" "${B100[@]}" "${OV[@]}" ;;
    zero1_overlap_bf16) plan $n schedules/zero1.lua "${W[@]}" "${B100[@]}" "${OV[@]}" "${BF16[@]}" ;;
    zero1_overlap_25mb) plan $n schedules/zero1.lua "${W[@]}" "${B100[@]}" --set parallel.bucket_mb=25 "${OV[@]}" ;;
    zero1_pgather) plan $n schedules/zero1.lua "${W[@]}" "${B100[@]}" "${OV[@]}" "${PG[@]}" ;;
    zero1_pgather_bf16) plan $n schedules/zero1.lua "${W[@]}" "${B100[@]}" "${OV[@]}" "${PG[@]}" "${BF16[@]}" ;;
    zero2_pgather_bf16) plan $n schedules/zero2.lua "${W[@]}" "${OV[@]}" "${PG[@]}" "${BF16[@]}" ;;
    zero2) plan $n schedules/zero2.lua "${W[@]}" ;;
    zero2_overlap) plan $n schedules/zero2.lua "${W[@]}" "${OV[@]}" ;;
    zero2_overlap_bf16) plan $n schedules/zero2.lua "${W[@]}" "${OV[@]}" "${BF16[@]}" ;;
    fsdp_overlap) plan $n schedules/fsdp.lua "${W[@]}" "${OV[@]}" ;;
    *) echo "unknown run $n" ;;
  esac
done
[ "${COMPILE_ONLY:-0}" = 1 ] && exit 0
echo "== ours, $N ranks ($(date +%T))"
single() { # ROUND: the one-GPU step on each GPU of SINGLE_GPUS (single = GPU 0, single_gpuG = GPU G), [single_low]
  local g r=$1 name
  for g in ${SINGLE_GPUS:-$(seq 0 $((N - 1)))}; do
    name=single; [ "$g" = 0 ] || name=single_gpu$g
    CUDA_VISIBLE_DEVICES=$g timeout 120 $DDPRUN $P/t_single.bin --steps ${SINGLE_STEPS:-20} --metrics $D/$name.r$r.jsonl --quiet >$D/$name.r$r.log 2>&1 ||
      echo "$name failed: $(tail -1 $D/$name.r$r.log)"
  done
  if [ "${SINGLE_LOW:-0}" = 1 ]; then
    CUDA_VISIBLE_DEVICES=0 timeout 120 $DDPRUN $P/t_single_low.bin --steps 20 --metrics $D/single_low.r$r.jsonl --quiet >$D/single_low.r$r.log 2>&1 ||
      echo "single_low failed: $(tail -1 $D/single_low.r$r.log)"
  fi
}
for r in $(seq 1 $ROUNDS); do
  [ "$r" = 1 ] || [ "${SINGLE_ROUNDS:-1}" = 1 ] && single $r
  for n in $RUNS; do
    [ -f $P/t_$n.bin ] || continue
    m=$(mods $n); prio=0; side=()
    case $m in *_comm*) prio=2 ;; esac
    case $m in *_alloc*) k=${m##*_alloc}; side+=(DDP_NCCL_MEM_ARENAS=${k%%_*}) ;; esac
    case $m in *_each*) side+=(DDP_PEER_COPY_BATCH=0) ;; esac
    case $m in *_side*)
      k=${m##*_side}; k=${k%_t0}; side+=(DDP_SIDE_SMS=$k)
      case $m in *_t0) ;; *) side+=(DDP_GEMM_SM_TARGET=$((${SMS:-132} - k))) ;; esac ;;
    esac
    env "${side[@]}" DDP_STREAM_PRIORITY=$prio timeout 120 $DDPRUN $P/t_$n.bin --nproc $N --steps $STEPS --metrics $D/$n.r$r.jsonl --quiet >$D/$n.r$r.log 2>&1 ||
      { echo "$n round $r failed: $(tail -1 $D/$n.r$r.log)"; rm -f $D/$n.r$r.jsonl; }
  done
done
if [ "${TORCH:-1}" = 1 ]; then
  echo "== PyTorch, $N ranks ($(date +%T))"
  modes=ddp; [ "${TORCH_FSDP2:-0}" = 1 ] && modes=ddp,fsdp2
  timeout 240 torchrun --nproc_per_node=$N $B/torch_fsdp.py --modes $modes --reshard true >$D/torch.log 2>&1; echo "torch rc=$?"
  grep -E "^TORCH_FSDP" $D/torch.log | cut -c1-240
fi
tar czf $OUT/ddp_table.tar.gz -C $L ddp_table
echo "== table ($(date +%T))"
python3 $B/summary_ddp_table.py $D | tee $OUT/table.txt
