-- tests/schedules_bad/wrong_type.lua: a string where a number belongs (line 5, adamw{}).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = adamw { lr = "fast" },
  steps = 1,
}
