-- schedules/toy.lua: the single-process reference of the seeds' naive DDP correctness check
-- (toymodel_naive_ddp): ToyModel (tests/common.py: fc1 10->10 no bias, fc2 10->50 with a frozen bias,
-- fc3 50->5 no bias, the frozen no_grad_fixed_param) trained on 20 random rows with MSE and SGD lr 0.1
-- for 5 steps on one rank. toy_ddp.lua is the same training on 2 ranks; the weights must match.
local models = require "models"

return schedule {
  model     = models.toy(),
  data      = { global_batch = 20, rows = 20, seed = 0 },
  precision = "fp32",
  optimizer = sgd { lr = 0.1 },
  parallel  = single(),
  steps = 5, seed = 0,
}
