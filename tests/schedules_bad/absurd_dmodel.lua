-- tests/schedules_bad/absurd_dmodel.lua: an absurd d_model.
return schedule {
  model = transformer { d_model = 1e12, d_ff = 6400, layers = 48, heads = 25 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  steps = 1,
}
