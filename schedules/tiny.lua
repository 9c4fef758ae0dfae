-- schedules/tiny.lua: a tiny transformer (d_model 64, 2 layers, 4 heads, vocab 256, context 32) for the
-- fp32 checks: the CUDA executor against the CPU reference and both against PyTorch. 8 sequences of
-- random tokens per step, AdamW with a cosine schedule (2 warmup steps) and clipping at 1.0, 10 steps.
-- A CPU reference run of all 10 steps takes well under 5 s.
local models = require "models"

return schedule {
  model     = models.tiny(),
  data      = { global_batch = 8, tokens = "random", seed = 1 },
  precision = "fp32",
  optimizer = adamw { lr = 1e-3, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1,
                      schedule = "cosine", warmup = 2, cycle = 10, lr_min = 1e-4, clip = 1.0 },
  steps = 10, seed = 1,
}
