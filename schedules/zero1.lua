-- schedules/zero1.lua: ZeRO stage 1 on the standard XL DDP setup: the flat gradient buffer is
-- reduce-scattered (each rank receives the summed gradients of its shard only), each rank runs AdamW
-- on its shard with its shard of the optimizer state, then the parameters are all-gathered.
local xl_ddp = require "xl_ddp"
return schedule(xl_ddp { sync = "flat", shard = "zero1" })
