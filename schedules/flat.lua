-- schedules/flat.lua: flat DDP (seeds: minimal_ddp_flat_benchmarking): after the backward, one all-reduce of all
-- gradients flattened into a single buffer.
-- Setup of the seeds: XL model, 1 node x 2 GPUs, 4 sequences of 512 tokens per rank, bf16
-- (see xl_ddp.lua). Compile: ddpc schedules/flat.lua -o plan.bin
local xl_ddp = require "xl_ddp"
return schedule(xl_ddp { sync = "flat" })
