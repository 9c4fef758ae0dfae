-- tests/schedules_bad/wrong_type_top.lua: steps as a string; top-level fields report schedule{}'s line (2).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  steps = "ten",
}
