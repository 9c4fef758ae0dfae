-- schedules/toy_tied.lua: ToyModelWithTiedWeights of the seeds' DDP tests (fc1..fc5 without biases,
-- fc4's weight shared with fc2) on one rank: 20 random rows, MSE, SGD lr 0.1, 5 steps. The shared
-- weight is one parameter (fc2.weight) that receives the gradients of both uses.
local models = require "models"

return schedule {
  model     = models.toy_tied(),
  data      = { global_batch = 20, rows = 20, seed = 0 },
  precision = "fp32",
  optimizer = sgd { lr = 0.1 },
  steps = 5, seed = 0,
}
