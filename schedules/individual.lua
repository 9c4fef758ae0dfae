-- schedules/individual.lua: overlapped per-parameter DDP (seeds: ddp_overlap_individual_parameters): each gradient is
-- all-reduced asynchronously as soon as the backward produces it.
-- Setup of the seeds: XL model, 1 node x 2 GPUs, 4 sequences of 512 tokens per rank, bf16
-- (see xl_ddp.lua). Compile: ddpc schedules/individual.lua -o plan.bin
local xl_ddp = require "xl_ddp"
return schedule(xl_ddp { sync = "individual", overlap = "backward" })
