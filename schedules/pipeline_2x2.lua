-- schedules/pipeline_2x2.lua: a pipeline with data-parallel replicas on the reference executor: the tiny
-- transformer (d_model 64, 2 layers) learning the repeating token pattern on 2 stages x 2 replicas (4 ranks:
-- rank = replica x 2 + stage; ranks 0, 1 are replica 0's pipeline, ranks 2, 3 replica 1's). Each replica
-- takes half of the global batch of 8 sequences, in 2 microbatches of 2, 1F1B; after its backward each
-- stage averages its gradients with the other replica's copy of the stage (an all-reduce among ranks 0, 2
-- or 1, 3). fp32, AdamW, 20 steps. The same run on one rank (`--set parallel=nil`) gives the same weights.
local models = require "models"

return schedule {
  model     = models.tiny(),
  data      = { global_batch = 8, tokens = "pattern", seed = 1 },
  precision = "fp32",
  optimizer = adamw { lr = 3e-3, betas = { 0.9, 0.95 }, weight_decay = 0.0 },
  parallel  = pipeline { stages = 2, replicas = 2, microbatches = 2, schedule = "1f1b" },
  steps = 20, seed = 1,
}
