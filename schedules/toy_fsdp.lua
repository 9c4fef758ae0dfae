-- schedules/toy_fsdp.lua: toy_ddp.lua (the seeds' ToyModel, 20 rows, SGD lr 0.1, 5 steps, 2 ranks) with
-- FSDP and units of our own: the head (fc3) is one unit and everything before it another. The function
-- gets the trainable parameters in gradient-ready order ({ name =, bytes =, order = }, fc3.weight first)
-- and returns the units, each a list of names, as a ddp{ buckets = } function does. No prefetch, and a
-- unit's gathered parameters are kept from its forward to its backward. After 5 steps the weights (the
-- ranks' shards together) must equal toy.lua's final weights.
local models = require "models"

local function head_and_body(params)
  local head, body = {}, {}
  for _, p in ipairs(params) do
    if p.name:match("^fc3%.") then head[#head + 1] = p.name else body[#body + 1] = p.name end
  end
  return { head, body }
end

return schedule {
  model     = models.toy(),
  data      = { global_batch = 20, rows = 20, seed = 0 },
  precision = "fp32",
  optimizer = sgd { lr = 0.1 },
  parallel  = fsdp { ranks = 2, units = head_and_body, prefetch = 0, reshard_after_forward = false },
  steps = 5, seed = 0,
}
