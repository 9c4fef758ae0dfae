-- schedules/pipeline_1f1b.lua: pipeline parallelism on the standard XL setup (xl_pipeline.lua): the 48
-- blocks on 2 stages (2 GPUs; the embedding with the first stage, the final norm, head and loss with the
-- last; the compiler balances the blocks by its own cost of each), the global batch of 16 sequences in 8
-- microbatches of 2, run 1F1B (PipeDream-flush: after a warmup of forwards, each stage alternates one
-- forward and one backward). Bubble (p-1)/(m+p-1) = 1/9 of a step. pipeline_gpipe.lua is the same in
-- GPipe order.
local xl_pipeline = require "xl_pipeline"
return schedule(xl_pipeline { stages = 2, microbatches = 8, schedule = "1f1b" })
