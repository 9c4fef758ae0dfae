-- tests/schedules_bad/missing_tokens.lua: a token file that does not exist (resolved against this folder).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8, tokens = "no_such_tokens.bin" },
  optimizer = sgd { lr = 0.1 },
  steps = 1,
}
