-- tests/schedules_bad/warmup.lua: warmup must leave timed steps.
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  steps = 5, warmup = 5,
}
