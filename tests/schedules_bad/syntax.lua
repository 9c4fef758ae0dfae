-- tests/schedules_bad/syntax.lua: a Lua syntax error: a comma missing at the end of line 4, reported by Lua on line 5 (file:line kept).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 }
  optimizer = sgd { lr = 0.1 },
  steps = 1,
}
