#!/usr/bin/env bash
# tests/bench/device_session.sh: one 2-GPU call that checks and measures what a session changed, most
# important first, under one time budget (BUDGET seconds, default 560; a part that would not fit is
# reported as skipped): (1) the fused kernels against the reference (device_fusion.sh kernels), the CUDA
# executor tests and the whole bf16 step against the reference executor (gpu_step.sh; fused by default);
# (2) the 2-GPU equivalence suite (gpu_ddp.sh: DDP modes, ZeRO-1/2/3, FSDP, pipelines, launches, failures);
# (3) the pipeline benchmark on 2 GPUs (pipeline_2gpu.sh with SCHEDS/MBS below, PyTorch pipelining in the
# same call); (4) the calibration and explain --compare (device_calibrate.sh); (5) the XL step with fusion
# on / off (device_fusion.sh bench); (6) GPipe's start-up hang with CUDA's module loading eager (the
# default of a multi-rank ddprun) and lazy (gpipe_loading.sh); (7) the 2-GPU calibration and its targets
# (device_calibrate2.sh); (8) pipeline bubbles under NCCL point-to-point settings (pipeline_nccl_env.sh); (9) the GEMM slowdown beside
# an all-reduce per communication path (ddprun --bench interference, IMB sizes in MiB, IPATHS paths, each twice);
# (10) the XL DDP step with the communicators configured by the schedule, and bf16 gradients' losses
# (ddp_nccl_config.sh). PARTS (default "fusion_kernels cuda_exec gpu_step gpu_ddp pipeline calibration
# fusion_bench") picks and orders them; the pipeline part passes SCHEDS, MBS, BIG and SINGLE16 on. After
# tests/bench/prepare_device.sh here; carry dev/. Logs: everything under $OUT, tarred into
# $OUT/session.tar.gz at the end (a call returns only a few files).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
T0=$(date +%s)
left() { echo $((${BUDGET:-560} - ($(date +%s) - T0))); }
PARTS=${PARTS:-"fusion_kernels cuda_exec gpu_step gpu_ddp pipeline calibration fusion_bench"}
part() { # part NEED NAME COMMAND...: runs COMMAND when NEED seconds are left, its output to $OUT/NAME.log
  local need=$1 name=$2; shift 2
  case " $PARTS " in *" $name "*) ;; *) return ;; esac
  if [ "$(left)" -lt "$need" ]; then echo "== $name: skipped ($(left) s left, needs $need)" | tee -a $OUT/summary.txt; return; fi
  echo "== $name ($(date +%T), $(left) s left)"
  local s=$(date +%s)
  "$@" >$OUT/$name.log 2>&1
  local rc=$?
  echo "== $name: rc=$rc in $(($(date +%s) - s)) s" | tee -a $OUT/summary.txt
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for p in $PARTS; do
  case $p in
    fusion_kernels) part 60 fusion_kernels env FUSION_PARTS=kernels bash tests/bench/device_fusion.sh
      grep -E "rc=|^FAIL" $OUT/fusion_kernels.log | head -20 ;;
    cuda_exec) part 30 cuda_exec timeout 60 dev/bin/test_cuda_exec_gpu; tail -1 $OUT/cuda_exec.log ;;
    gpu_step) part 90 gpu_step timeout 150 bash tests/e2e/gpu_step.sh
      grep -E "^(ok|FAIL)" $OUT/gpu_step.log | sort | uniq -c | sort -rn | head -30 ;;
    gpu_ddp) part 120 gpu_ddp timeout 240 bash tests/e2e/gpu_ddp.sh; grep -E "^(ok|FAIL|SKIP)" $OUT/gpu_ddp.log | head -60 ;;
    gpipe_loading) part 60 gpipe_loading timeout 120 bash tests/bench/gpipe_loading.sh; cat $OUT/gpipe_loading.log ;;
    calibrate2) part 150 calibrate2 timeout 330 bash tests/bench/device_calibrate2.sh; tail -60 $OUT/calibrate2.log ;;
    pipeline) part 150 pipeline env SCHEDS="${SCHEDS:-gpipe 1f1b zero_bubble}" MBS="${MBS:-8}" STEPS=${PIPE_STEPS:-12} \
        timeout ${PIPE_TIMEOUT:-200} bash tests/bench/pipeline_2gpu.sh
      tail -25 $OUT/pipeline.log ;;
    interference) part 90 interference bash -c 'for mb in ${IMB:-25 100}; do for k in 1 2; do
        timeout 100 dev/bin/ddprun --bench interference --nproc 2 --mb $mb --paths ${IPATHS:-default,maxctas8,copy} \
          --out '$OUT'/interference.jsonl || echo "interference $mb MiB: rc=$?"; done; done'
      grep -vE "^(interference:|path )" $OUT/interference.log | head -30 ;;
    ddp_nccl) part 150 ddp_nccl timeout 300 bash tests/bench/ddp_nccl_config.sh; tail -32 $OUT/ddp_nccl.log ;;
    nccl_env) part 100 nccl_env timeout 240 bash tests/bench/pipeline_nccl_env.sh; tail -20 $OUT/nccl_env.log ;;
    calibration) part 120 calibration timeout 200 bash tests/bench/device_calibrate.sh; tail -20 $OUT/calibration.log ;;
    fusion_bench) part 80 fusion_bench env FUSION_PARTS=bench timeout 120 bash tests/bench/device_fusion.sh
      tail -12 $OUT/fusion_bench.log ;;
    *) echo "== $p: no such part" | tee -a $OUT/summary.txt ;;
  esac
done
echo "== summary"; cat $OUT/summary.txt
# Only a few files come back from a call: everything goes into one archive, the summary beside it.
tar czf /tmp/session.tar.gz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/session.tar.gz $OUT/ &&
  echo "logs: session.tar.gz"
