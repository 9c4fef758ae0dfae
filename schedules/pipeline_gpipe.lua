-- schedules/pipeline_gpipe.lua: pipeline_1f1b.lua (XL on 2 stages, 8 microbatches of 2 sequences) in GPipe
-- order: every microbatch's forward, then every backward. The same bubble as 1F1B, (p-1)/(m+p-1) = 1/9,
-- but each stage holds the activations of all 8 microbatches at the end of the forward (1F1B: at most p).
local xl_pipeline = require "xl_pipeline"
return schedule(xl_pipeline { stages = 2, microbatches = 8, schedule = "gpipe" })
