-- tests/schedules_bad/wrong_ctor.lua: an optimizer where the parallel layout belongs (line 6).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  parallel = adamw { lr = 0.1 },
  steps = 1,
}
