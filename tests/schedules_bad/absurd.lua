-- tests/schedules_bad/absurd.lua: a vocabulary whose embedding would hold more than 2^31-1 elements.
return schedule {
  model = transformer { d_model = 1600, d_ff = 6400, layers = 48, heads = 25, vocab = 10000000 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  steps = 1,
}
