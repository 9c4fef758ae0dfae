-- schedules/zero1_overlap.lua: the fastest data-parallel XL setup measured (docs/PERFORMANCE.md): ZeRO-1 over
-- 100 MB buckets on the standard XL DDP setup (xl_ddp.lua), with the sharded update in the backward. Each
-- bucket's gradients are reduce-scattered as soon as the backward finishes them; right after, on a stream
-- of its own, each rank updates its shard of the bucket (AdamW on 1/N of the parameters), and the bucket's
-- bf16 parameters are all-gathered, while the backward goes on. bf16 gradients halve the reduce-scatter's
-- bytes. The arenas come from ncclMemAlloc and are NCCL symmetric windows; with the zero-CTA policy NCCL
-- moves the all-gathers and the all-to-alls on the copy engines, and each reduce-scatter is an all-to-all
-- plus a sum of the received chunks (nccl = {...}), so no collective takes SMs from the backward but the
-- sums. On 2 x H200 (2026-11-27) this step is 0.967x our one-GPU step for twice the tokens; with
-- `--set parallel.grad_dtype=fp32` (fp32 gradients) 1.011x.
local xl_ddp = require "xl_ddp"
local s = xl_ddp { sync = "bucketed", bucket_mb = 100, shard = "zero1", optimizer_overlap = true, grad_dtype = "bf16" }
s.nccl = { register = "window", cta_policy = "zero", reduce_scatter = "alltoall" }
return schedule(s)
