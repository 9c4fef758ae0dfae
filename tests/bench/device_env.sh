# tests/bench/device_env.sh (sourced by the device_*.sh scripts after `cd` to the repository root): the
# environment every GPU call shares. R = repository root, OUT = what comes back, L = logs (tarred into
# $OUT at the end), P = compiled plans, B = tests/bench, A = the PyTorch anchor; the binaries and the warm
# kernel cache come from dev/ (tests/bench/prepare_device.sh; DDPRUN_BIN names another ddprun, e.g. one
# built from an earlier commit for an A/B); NVLink multicast stays off. kern() runs one
# op's kernel checks against the reference executor; ceiling() measures the dense bf16 ceiling that the XL
# runs' mfu is against; xl_tail() ends the one-GPU XL variant scripts (torch.compile with TORCH_COMPILE=1, its
# joules per step with TORCH_ENERGY=1); clocks_start / clocks_stop sample
# GPU 0's clocks and power into a CSV and span() marks what ran when (summary_xl_variants.py joins them).
R=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; L=/tmp/logs; mkdir -p $L
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export DDPC=$R/dev/bin/ddpc DDPRUN=${DDPRUN_BIN:-$R/dev/bin/ddprun} ST_COMPARE=$R/dev/bin/st_compare DDP_SOURCE_DIR=$R
export DDPC_CACHE_DIR=$R/dev/cache DDP_TEMPLATE_DIR=$R/templates DDP_TEST_TMP=/tmp/ddpt
P=/tmp/plans; mkdir -p $P $DDP_TEST_TMP; B=tests/bench; A=$B/torch_ddp_anchor.py
ceiling() { # LOG: PyTorch's 8192^3 bf16 GEMM into LOG; sets CEIL (TFLOP/s, empty when unknown) and PEAK
  timeout 180 python3 $A --skip-ddp --kernels >"$1" 2>&1; echo "torch kernels rc=$?"
  CEIL=$(python3 -c "
import json, sys
for l in open(sys.argv[1]):
    if l.startswith('ANCHOR') and 'gemm_bf16_8192' in l: print(round(json.loads(l[7:])['TFLOPs'], 1))" "$1")
  PEAK=${CEIL:+--peak-tflops $CEIL}; echo "dense bf16 ceiling ${CEIL:-unknown} TFLOP/s"
}
kern() { # NAME OP ENV...: gpu_kernels --op OP under ENV, log $OUT/kern_NAME.log, one line of result
  local n=$1 op=$2; shift 2
  env "$@" timeout 180 dev/bin/gpu_kernels --op $op >$OUT/kern_$n.log 2>&1
  echo "gpu_kernels $op ${*:-(defaults)} rc=$?: $(tail -1 $OUT/kern_$n.log)"
  grep -E "^FAIL" $OUT/kern_$n.log | head -5
}
xl_tail() { # TRACED COMPILE: torch.compile (TORCH_COMPILE, default COMPILE), the table of $VARIANTS and the
  # traced variants (summary_xl_variants.py, also $OUT/table.txt), gpu_step.sh when STEP=1, $L tarred
  if [ "${TORCH_COMPILE:-$2}" = 1 ]; then
    echo "== torch.compile ($(date +%T))"
    timeout 300 python3 $A --size xl --warmup 3 --iters 10 --compile >$L/torch_compile.log 2>&1; echo "torch.compile rc=$?"
  fi
  if [ "${TORCH_ENERGY:-0}" = 1 ]; then # torch.compile's joules per step (NVML), for the table's J/comp
    echo "== torch.compile energy ($(date +%T))"
    timeout 300 python3 $B/torch_extra.py --xl-energy --compile >$L/torch_energy.log 2>&1; echo "torch energy rc=$?"
    grep -h '"xl_energy"' $L/torch_energy.log
  fi
  echo "== table ($(date +%T))"
  python3 $B/summary_xl_variants.py $L "${CEIL:-}" "$VARIANTS" "$1" >$OUT/table.txt 2>&1
  cat $OUT/table.txt
  if [ "${STEP:-0}" = 1 ]; then
    echo "== gpu_step ($(date +%T))"
    timeout 240 bash tests/e2e/gpu_step.sh >$L/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $L/gpu_step.log | cut -c1-140
  fi
  tar czf $OUT/logs.tgz -C $L .
}
clocks_start() { # FILE: GPU 0's timestamp, SM and memory clocks (MHz), power (W), temperature and the active
  # clock-event reasons (a bit mask; older drivers: without it) every 100 ms into FILE, in the background
  local q="timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu"
  nvidia-smi -i 0 --query-gpu=$q,clocks_event_reasons.active --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null &
  CLOCKS_PID=$!; sleep 0.5
  if ! kill -0 $CLOCKS_PID 2>/dev/null; then
    nvidia-smi -i 0 --query-gpu=$q --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null &
    CLOCKS_PID=$!
  fi
}
clocks_stop() { kill "${CLOCKS_PID:-}" 2>/dev/null; wait "${CLOCKS_PID:-}" 2>/dev/null; }
span() { # NAME begin|end: one line in $L/spans.txt with nvidia-smi's timestamp format
  echo "$1 $2 $(date '+%Y/%m/%d %H:%M:%S.%3N')" >>$L/spans.txt
}
