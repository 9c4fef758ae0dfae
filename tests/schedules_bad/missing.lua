-- tests/schedules_bad/missing.lua: no model.
return schedule {
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  steps = 1,
}
