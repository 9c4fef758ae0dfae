-- schedules/tiny_pipeline.lua: the CPU check of pipelines: tiny_ddp.lua's tiny transformer (d_model 64, 2
-- layers) learning the repeating token pattern, one block per stage on 2 stages (2 ranks), the global batch
-- of 8 sequences in 4 microbatches of 2, 1F1B, fp32, AdamW, 20 steps. The same step on one rank
-- (`--set parallel=nil`) must give the same weights.
local models = require "models"

return schedule {
  model     = models.tiny(),
  data      = { global_batch = 8, tokens = "pattern", seed = 1 },
  precision = "fp32",
  optimizer = adamw { lr = 3e-3, betas = { 0.9, 0.95 }, weight_decay = 0.0 },
  parallel  = pipeline { stages = 2, microbatches = 4, schedule = "1f1b" },
  steps = 20, seed = 1,
}
