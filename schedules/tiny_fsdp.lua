-- schedules/tiny_fsdp.lua: tiny_ddp.lua (the tiny transformer on the token pattern, 2 ranks, AdamW, 20
-- steps) with FSDP: parameters, gradients and optimizer state sharded over the 2 ranks, one unit per block
-- plus the embedding and the head, each unit gathered (fp32, the precision) one unit ahead and freed after
-- its forward. The losses must match tiny_ddp.lua's. The reference executor runs it in about a second:
-- `ddprun tiny_fsdp.bin --device ref --nproc 2`.
local models = require "models"

return schedule {
  model     = models.tiny(),
  data      = { global_batch = 8, tokens = "pattern", seed = 1 },
  precision = "fp32",
  optimizer = adamw { lr = 3e-3, betas = { 0.9, 0.95 }, weight_decay = 0.0 },
  parallel  = fsdp { ranks = 2, prefetch = 1, reshard_after_forward = true },
  steps = 20, seed = 1,
}
