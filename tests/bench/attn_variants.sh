# tests/bench/attn_variants.sh (sourced): the XL plan compiled with attention tile variants (DDP_TUNE_* of
# compiler/kernel_launch.c) for the device scripts; prepare_device.sh compiles them once here so the
# kernel cache holds their modules. Usage: attn_variants_compile OUTDIR
attn_variants_compile() {
  local o=$1
  "$DDPC" schedules/bench_xl.lua -o $o/xl_attn_default.bin -q
  DDP_TUNE_FWD_WGMMA=2 DDP_TUNE_DKV_WGMMA=2 DDP_TUNE_DQ_WGMMA=2 "$DDPC" schedules/bench_xl.lua -o $o/xl_attn_mma.bin -q
  DDP_TUNE_FWD_WARPS=4 "$DDPC" schedules/bench_xl.lua -o $o/xl_attn_fwd4w.bin -q
  DDP_TUNE_DKV_MT=1 DDP_TUNE_DQ_MT=1 "$DDPC" schedules/bench_xl.lua -o $o/xl_attn_bwdmt1.bin -q
  DDP_TUNE_FWD_WARPS=4 DDP_TUNE_DKV_MT=1 DDP_TUNE_DQ_MT=1 "$DDPC" schedules/bench_xl.lua -o $o/xl_attn_both.bin -q
}
