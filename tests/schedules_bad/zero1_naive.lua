-- tests/schedules_bad/zero1_naive.lua: ZeRO-1 reduce-scatters a flat or bucketed gradient buffer (line 6).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = adamw { lr = 1e-3 },
  parallel = ddp { ranks = 2, sync = "naive", shard = "zero1" },
  steps = 1,
}
