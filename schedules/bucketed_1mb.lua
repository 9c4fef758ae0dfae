-- schedules/bucketed_1mb.lua: bucketed DDP with 1 MB buckets (seeds: ddp_bucketed_benchmarking, bucket sizes
-- 1/10/100/1000 MB): gradients grouped in gradient-ready order (reverse of the parameters) into
-- buckets of at most 1 MB, each all-reduced as soon as it is full, overlapping the backward.
-- Setup of the seeds: XL model, 1 node x 2 GPUs, 4 sequences of 512 tokens per rank, bf16
-- (see xl_ddp.lua). Compile: ddpc schedules/bucketed_1mb.lua -o plan.bin
local xl_ddp = require "xl_ddp"
return schedule(xl_ddp { sync = "bucketed", bucket_mb = 1, overlap = "backward" })
