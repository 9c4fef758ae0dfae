-- schedules/tiny_ddp.lua: the CPU quick start's DDP plan: the tiny transformer of tiny_pattern.lua (d_model
-- 64, 2 layers) learning the repeating token pattern on 2 ranks (4 sequences each) with bucketed DDP
-- (0.1 MB buckets, the all-reduces overlapped with the backward) and AdamW, 20 steps. The reference
-- executor runs it in about a second: `ddprun tiny_ddp.bin --device ref --nproc 2`.
local models = require "models"

return schedule {
  model     = models.tiny(),
  data      = { global_batch = 8, tokens = "pattern", seed = 1 },
  precision = "fp32",
  optimizer = adamw { lr = 3e-3, betas = { 0.9, 0.95 }, weight_decay = 0.0 },
  parallel  = ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.1, overlap = "backward" },
  steps = 20, seed = 1,
}
