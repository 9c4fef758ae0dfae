-- tests/schedules_bad/heads.lua: 5 heads do not divide d_model 64 (line 3).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 5, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  steps = 1,
}
