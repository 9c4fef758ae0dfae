-- tests/schedules_bad/betas.lua: beta2 = 1 is out of [0, 1) (line 5).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = adamw { lr = 1e-3, betas = { 0.9, 1.0 } },
  steps = 1,
}
