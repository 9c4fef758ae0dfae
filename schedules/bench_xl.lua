-- schedules/bench_xl.lua: end-to-end benchmarking of the seeds (benchmarking_script,
-- benchmarking_mixed_precision) for the XL model on one GPU: context 512, batch 4, bf16 mixed
-- precision, AdamW lr 3e-4 betas (0.9, 0.95) weight decay 0.1; 20 steps, the first 5 untimed warmup.
-- Other sizes: ddpc schedules/bench_xl.lua --set model.d_model=... or copy with models.transformer("large").
local models = require "models"

return schedule {
  model     = models.transformer("xl", { context = 512 }),
  data      = { global_batch = 4, tokens = "random", seed = 1 },
  precision = "bf16",
  optimizer = adamw { lr = 3e-4, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
  parallel  = single(),
  steps = 20, warmup = 5, seed = 1,
}
