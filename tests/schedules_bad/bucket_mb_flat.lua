-- tests/schedules_bad/bucket_mb_flat.lua: bucket_mb only means something for bucketed sync (line 6).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  parallel = ddp { ranks = 2, sync = "flat", bucket_mb = 10 },
  steps = 1,
}
