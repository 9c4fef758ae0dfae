-- schedules/naive.lua: naive DDP (seeds: naive_ddp_benchmarking): after the backward, one all-reduce per parameter
-- gradient, nothing overlapped.
-- Setup of the seeds: XL model, 1 node x 2 GPUs, 4 sequences of 512 tokens per rank, bf16
-- (see xl_ddp.lua). Compile: ddpc schedules/naive.lua -o plan.bin
local xl_ddp = require "xl_ddp"
return schedule(xl_ddp { sync = "naive" })
