-- schedules/toy_ddp.lua: the seeds' toy DDP check (toymodel_naive_ddp, test_ddp_bucketed): the same
-- ToyModel, data and SGD as toy.lua, trained on 2 ranks (10 rows each) with bucketed DDP. The ~3.6 KB
-- of gradients are split into several buckets by bucket_mb = 0.001 (about 1 KB). Rank 0's weights are
-- broadcast at the start; after 5 steps every rank must hold toy.lua's final weights.
local models = require "models"

return schedule {
  model     = models.toy(),
  data      = { global_batch = 20, rows = 20, seed = 0 },
  precision = "fp32",
  optimizer = sgd { lr = 0.1 },
  parallel  = ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.001, overlap = "backward", broadcast = true },
  steps = 5, seed = 0,
}
