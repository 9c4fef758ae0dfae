-- tests/schedules_bad/mlp_chain.lua: fc2 expects 20 inputs but fc1 gives 10 (line 6).
return schedule {
  model = mlp { layers = {
    linear { name = "fc1", in_features = 4, out_features = 10 },
    relu(),
    linear { name = "fc2", in_features = 20, out_features = 2 },
  } },
  data = { global_batch = 4 },
  optimizer = sgd { lr = 0.1 },
  steps = 1,
}
