-- schedules/zero2.lua: ZeRO stage 2 on the standard XL DDP setup (xl_ddp.lua): the gradients are
-- reduce-scattered bucket by bucket during the backward, and each rank keeps only its shard of them, of
-- the fp32 masters and of the AdamW state; each rank updates its shard, then the bf16 parameters are
-- all-gathered. 100 MB buckets (about 25M fp32 gradients, close to one XL block of 31M parameters): the
-- bucket size whose all-reduces overlapped the backward best in the bucketed DDP study (docs/PERFORMANCE.md),
-- while a bucket's full gradients, held only until its reduce-scatter, stay small.
local xl_ddp = require "xl_ddp"
return schedule(xl_ddp { sync = "bucketed", bucket_mb = 100, shard = "zero2" })
