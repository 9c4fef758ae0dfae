-- schedules/lib/xl_fsdp.lua: the XL setup of xl_ddp.lua (xl_setup.lua: XL, context 512, 4 sequences per
-- rank, bf16, AdamW, 20 steps with 5 warmup) with FSDP (ZeRO-3) instead of DDP. It returns a function of
-- the fsdp{} options (ranks, default 2; units, prefetch, prefetch_forward, prefetch_backward,
-- reshard_after_forward, gather_dtype, reduce_dtype, ...) giving back the schedule's fields:
--     local xl_fsdp = require "xl_fsdp"
--     return schedule(xl_fsdp { prefetch = 2 })
-- fsdp{} is built with `1` as its second argument: its errors point at the line calling xl_fsdp.
local xl_setup = require "xl_setup"

return function(opts)
  if type(opts) ~= "table" then
    error("xl_fsdp expects a table of fsdp{} options such as { prefetch = 2 }, got " .. tostring(opts), 2)
  end
  local d = { ranks = 2 }
  for k, v in pairs(opts) do d[k] = v end
  return xl_setup(d.ranks, fsdp(d, 1))
end
