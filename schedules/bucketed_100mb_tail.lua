-- schedules/bucketed_100mb_tail.lua: bucketed DDP with 100 MiB buckets, except for the gradients ready
-- last: the fused weights that begin within the last 100 MiB (XL: block 0 and the embedding table) go in
-- buckets of at most 16 MiB (schedules/lib/buckets.lua). The last bucket is then the embedding's alone, so
-- less is communicated and updated after the backward's last kernel than with bucketed_100mb.lua, whose
-- last bucket holds block 0 and the embedding. Setup of the seeds (xl_ddp.lua).
-- Compile: ddpc schedules/bucketed_100mb_tail.lua -o plan.bin
local xl_ddp = require "xl_ddp"
local buckets = require "buckets"
return schedule(xl_ddp { sync = "bucketed", buckets = buckets.sized { mb = 100, tail_mb = 100 }, overlap = "backward" })
