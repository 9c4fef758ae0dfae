-- schedules/sharded_optimizer.lua: optimizer state sharding of the seeds (optimizer_state_sharding,
-- its peak-memory and speed questions): the standard XL DDP setup with bucketed gradients (100 MB,
-- overlapped), where each rank keeps AdamW state only for its share of the parameters, updates that
-- share and broadcasts the updated parameters to the other rank.
local xl_ddp = require "xl_ddp"
return schedule(xl_ddp { sync = "bucketed", bucket_mb = 100, overlap = "backward", shard = "optimizer" })
