-- tests/schedules_bad/mode.lua: an unknown step mode.
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  mode = "inference",
  steps = 1,
}
