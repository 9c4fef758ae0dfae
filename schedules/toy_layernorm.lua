-- schedules/toy_layernorm.lua: the ToyModel of the seeds' mixed-precision question
-- (benchmarking_mixed_precision (b)): fc1 Linear(10, 10, no bias) -> ReLU -> ln LayerNorm(10) -> fc2
-- Linear(10, 5, no bias), trained on 20 random rows with MSE and SGD lr 0.1 for 5 steps on one rank.
local models = require "models"

return schedule {
  model     = models.toy_layernorm(10, 5),
  data      = { global_batch = 20, rows = 20, seed = 0 },
  precision = "fp32",
  optimizer = sgd { lr = 0.1 },
  steps = 5, seed = 0,
}
