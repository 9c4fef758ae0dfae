-- tests/schedules_bad/overlap_naive.lua: naive sync cannot overlap the backward (line 6).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  parallel = ddp { ranks = 2, sync = "naive", overlap = "backward" },
  steps = 1,
}
