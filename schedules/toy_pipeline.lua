-- schedules/toy_pipeline.lua: a seed-style MLP in pipeline stages: models.mlp_deep() (five Linear layers
-- with ReLU between: nine entries) on 3 stages (3 ranks), 24 rows in 4 microbatches of 6, 1F1B, SGD lr
-- 0.1, 5 steps. The split is a function of the pipeline (called when ddpc loads the schedule): it cuts
-- only after a ReLU, so each Linear keeps its ReLU, and gives the earlier chunks the extra pair:
-- {4, 4, 1} on 3 stages ({fc1 relu fc2 relu}, {fc3 relu fc4 relu}, {fc5}), {6, 3} with
-- --set parallel.stages=2. The same run on one rank (`--set parallel=nil`) must give the same weights.
local models = require "models"

local function whole_pairs(info)
  local n = (info.layers + 1) // 2 -- Linear+ReLU pairs, the last Linear alone
  local split = {}
  for c = 1, info.chunks do
    split[c] = 2 * (n // info.chunks + (c <= n % info.chunks and 1 or 0))
  end
  split[info.chunks] = split[info.chunks] - 1
  return split
end

return schedule {
  model     = models.mlp_deep(),
  data      = { global_batch = 24, rows = 24, seed = 0 },
  precision = "fp32",
  optimizer = sgd { lr = 0.1 },
  parallel  = pipeline { stages = 3, microbatches = 4, schedule = "1f1b", split = whole_pairs },
  steps = 5, seed = 0,
}
