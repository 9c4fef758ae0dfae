# tests/bench/adamw_variants.sh (sourced): AdamW kernel shapes tried on the XL step (DDP_TUNE_ADAMW_* of
# compiler/kernel_launch.c). ADAMW_VARIANTS lists "name:VAR=value ..." entries; adamw_env NAME prints the
# variables of one; prepare_device.sh compiles the bf16 and fp32 XL plans under each so the kernel cache
# holds their modules.
ADAMW_VARIANTS=("default:" "v4u2:DDP_TUNE_ADAMW_VEC=4 DDP_TUNE_ADAMW_UNROLL=2" "v8u2:DDP_TUNE_ADAMW_UNROLL=2"
  "v4u4:DDP_TUNE_ADAMW_VEC=4 DDP_TUNE_ADAMW_UNROLL=4" "v8u2g1056:DDP_TUNE_ADAMW_UNROLL=2 DDP_TUNE_ADAMW_GRID=1056")
adamw_env() { local v; for v in "${ADAMW_VARIANTS[@]}"; do [ "${v%%:*}" = "$1" ] && echo "${v#*:}"; done; }
adamw_variants_compile() { # OUTDIR
  local v name
  for v in "${ADAMW_VARIANTS[@]}"; do
    name=${v%%:*}
    env ${v#*:} "$DDPC" schedules/bench_xl.lua -o $1/xl_adamw_$name.bin -q --set warmup=3
    env ${v#*:} "$DDPC" schedules/bench_xl.lua -o $1/xl_fp32_adamw_$name.bin -q --set precision=fp32
  done
}
