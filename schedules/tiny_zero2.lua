-- schedules/tiny_zero2.lua: tiny_ddp.lua (the tiny transformer on the token pattern, 2 ranks, 0.1 MB
-- buckets overlapped with the backward, AdamW, 20 steps) with ZeRO-2: each bucket's gradients are
-- reduce-scattered, every rank keeps and updates only its shard. The losses must match tiny_ddp.lua's.
-- The reference executor runs it in about a second: `ddprun tiny_zero2.bin --device ref --nproc 2`.
local models = require "models"

return schedule {
  model     = models.tiny(),
  data      = { global_batch = 8, tokens = "pattern", seed = 1 },
  precision = "fp32",
  optimizer = adamw { lr = 3e-3, betas = { 0.9, 0.95 }, weight_decay = 0.0 },
  parallel  = ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.1, overlap = "backward", shard = "zero2" },
  steps = 20, seed = 1,
}
