-- tests/schedules_bad/neg_lr.lua: a negative learning rate (line 5).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = adamw { lr = -1, betas = { 0.9, 0.95 } },
  steps = 1,
}
