# tests/bench/plans.sh (sourced): compiles the benchmark plans of the device scripts into $PLANS with
# $DDPC; the kernel cache ($DDPC_CACHE_DIR) makes this fast. Usage: plans_single | plans_ddp | plans_sharding |
# plans_pipeline
c() { "$DDPC" "$@" -q; }
plans_single() {
  c schedules/bench_xl.lua -o $PLANS/xl_bf16_512.bin
  c schedules/bench_xl.lua -o $PLANS/xl_fp32_512.bin --set precision=fp32
  c schedules/bench_xl.lua -o $PLANS/xl_bf16_512_g16.bin --set grad_dtype=bf16
  for ctx in 128 256 1024; do c schedules/bench_xl.lua -o $PLANS/xl_bf16_$ctx.bin --set model.context=$ctx; done
  cp schedules/lib/models.lua $PLANS/
  for size in small medium large 2.7b; do
    sed "s/models.transformer(\"xl\"/models.transformer(\"$size\"/" schedules/bench_xl.lua >$PLANS/$size.lua
    c $PLANS/$size.lua -o $PLANS/${size}_bf16_512.bin
  done
  c schedules/bench_xl.lua -o $PLANS/xl_bf16_128_b16.bin --set model.context=128 --set data.global_batch=16
  c schedules/bench_xl.lua -o $PLANS/xl_bf16_512_naive.bin --set model.attention=naive
}
plans_ddp() {
  for s in naive flat individual bucketed_1mb bucketed_10mb bucketed_100mb bucketed_1000mb sharded_optimizer zero1; do
    c schedules/$s.lua -o $PLANS/ddp_$s.bin
  done
  c schedules/bucketed_10mb.lua -o $PLANS/ddp_bucketed_10mb_bf16grad.bin --set parallel.grad_dtype=bf16
  c schedules/bucketed_10mb.lua -o $PLANS/ddp_bucketed_10mb_optoverlap.bin --set parallel.optimizer_overlap=true
}
plans_sharding() { # the ZeRO levels on 2 ranks and on 1 (device_sharding_1gpu.sh, sharding_2gpu.sh)
  for s in zero1 zero2 fsdp; do
    c schedules/$s.lua -o $PLANS/shard_$s.bin
    c schedules/$s.lua -o $PLANS/shard_${s}_1.bin --set parallel.ranks=1 --set data.global_batch=4
  done
  c schedules/fsdp.lua -o $PLANS/shard_fsdp_g32.bin --set parallel.gather_dtype=fp32
  c schedules/tiny_fsdp.lua -o $PLANS/shard_tiny_fsdp_bf16.bin --set precision=bf16
  c schedules/tiny_fsdp.lua -o $PLANS/shard_tiny_fsdp_g32.bin --set precision=bf16 --set parallel.gather_dtype=fp32
  c schedules/tiny_zero2.lua -o $PLANS/shard_tiny_zero2.bin
}
plans_pipeline() { # the pipeline benchmark's plans (pipeline_2gpu.sh), where this tree has the schedules
  local m s
  for m in 4 8 16; do
    [ -f schedules/pipeline_gpipe.lua ] && c schedules/pipeline_gpipe.lua -o $PLANS/pipe_gpipe_m$m.bin --set parallel.microbatches=$m
    [ -f schedules/pipeline_1f1b.lua ] || continue
    c schedules/pipeline_1f1b.lua -o $PLANS/pipe_1f1b_m$m.bin --set parallel.microbatches=$m
    c schedules/pipeline_1f1b.lua -o $PLANS/pipe_interleaved_m$m.bin --set parallel.microbatches=$m \
      --set parallel.schedule=interleaved --set parallel.virtual_stages=2
    c schedules/pipeline_1f1b.lua -o $PLANS/pipe_zero_bubble_m$m.bin --set parallel.microbatches=$m \
      --set parallel.schedule=zero_bubble
  done
  [ -f schedules/pipeline_1f1b.lua ] && c schedules/pipeline_1f1b.lua -o $PLANS/pipe_sequential.bin \
    --set parallel.microbatches=1 --set parallel.schedule=sequential
  for s in 1f1b zero_bubble gpipe; do # BIG in pipeline_2gpu.sh: 16 microbatches of 4
    c schedules/pipeline_1f1b.lua -o $PLANS/pipe_${s}_m16_b64.bin --set parallel.microbatches=16 \
      --set parallel.schedule=$s --set data.global_batch=64
  done
  c schedules/bucketed_10mb.lua -o $PLANS/single_b16.bin --set parallel.ranks=1 --set data.global_batch=16
  c schedules/pipeline_1f1b.lua -o $PLANS/single_accum.bin --set parallel.stages=1 --set parallel.microbatches=16 \
    --set data.global_batch=64
  for s in gpipe 1f1b; do c schedules/tiny_pipeline.lua -o $PLANS/tiny_$s.bin --set parallel.schedule=$s; done
  for s in calibrate calibrate_ddp calibrate_zero; do c schedules/$s.lua -o $PLANS/$s.bin; done
  return 0
}
