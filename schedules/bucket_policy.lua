-- schedules/bucket_policy.lua: bucketed DDP with a bucket layout written in Lua. The standard XL DDP
-- setup (xl_ddp.lua), but instead of a size limit, one bucket per transformer block: parameters arrive
-- in gradient-ready order (the LM head and final norm first, block 47 ... block 0, the embedding
-- last); consecutive parameters of the same block share a bucket, every other parameter is grouped
-- with its neighbours outside blocks. Each block bucket of the XL model then holds 41M parameters
-- (about 164 MB of fp32 gradients), and its all-reduce starts as soon as the backward leaves the block.
local xl_ddp = require "xl_ddp"

local function one_bucket_per_block(params)
  local buckets, current, current_key = {}, nil, nil
  for _, p in ipairs(params) do          -- p = { name = "layers.3.attn.q_proj.weight", bytes = ..., order = ... }
    local key = p.name:match("^layers%.(%d+)%.") or "outside"
    if key ~= current_key then
      current = {}
      buckets[#buckets + 1] = current
      current_key = key
    end
    current[#current + 1] = p.name
  end
  return buckets
end

return schedule(xl_ddp { sync = "bucketed", buckets = one_bucket_per_block, overlap = "backward" })
