-- schedules/tiny_tensor.lua: the CPU quick start's tensor-parallel plan: the tiny transformer of
-- tiny_pattern.lua learning the repeating token pattern on 4 ranks as 2 data replicas x 2 tensor ranks
-- (mesh = { data = 2, tensor = 2 }: each block's heads and hidden units and the vocabulary split in two,
-- the replicas' gradients averaged in 0.1 MB buckets) with AdamW, 20 steps. The reference executor runs it
-- in about a second: `ddprun tiny_tensor.bin --device ref`; `ddpc inspect tiny_tensor.bin` shows the mesh,
-- each rank's shapes and the collectives per layer.
local models = require "models"

return schedule {
  model     = models.tiny(),
  data      = { global_batch = 8, tokens = "pattern", seed = 1 },
  precision = "fp32",
  optimizer = adamw { lr = 3e-3, betas = { 0.9, 0.95 }, weight_decay = 0.0 },
  parallel  = ddp { ranks = 4, sync = "bucketed", bucket_mb = 0.1, overlap = "backward" },
  mesh      = { data = 2, tensor = 2 },
  steps = 20, seed = 1,
}
