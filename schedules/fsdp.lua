-- schedules/fsdp.lua: FSDP (ZeRO-3) on the standard XL setup (xl_fsdp.lua), 2 ranks: parameters, gradients
-- and AdamW state are all sharded. One unit per transformer block plus the embedding and the head; a
-- unit's bf16 parameters are all-gathered one unit ahead (prefetch 1) on the communication stream, freed
-- after its forward and gathered again for its backward (reshard_after_forward); its gradients are
-- reduce-scattered in fp32 as soon as the backward leaves it. These are fsdp{}'s defaults, written out.
local xl_fsdp = require "xl_fsdp"
return schedule(xl_fsdp { ranks = 2, prefetch = 1, reshard_after_forward = true, gather_dtype = "bf16",
                          reduce_dtype = "fp32" })
