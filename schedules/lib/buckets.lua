-- schedules/lib/buckets.lua: bucket layouts for ddp{ buckets = ... } (docs/SCHEDULES.md, "Bucket and unit
-- functions"). buckets.sized{ mb = 100, tail_mb = 100, tail_bucket_mb = 16 } returns a bucket function
-- that fills buckets of at most `mb` MiB of gradients in gradient-ready order, as bucket_mb = mb does,
-- except for the gradients that are ready last: the fused weights that begin within the last `tail_mb`
-- MiB go into buckets of at most `tail_bucket_mb` MiB (0: one fused weight per bucket). A fused weight
-- (an entry's `unit`, such as the q, k and v projections of one block) is never split, and one larger
-- than the cap gets a bucket of its own. Why: a bucket is communicated and then updated once its last
-- gradient is ready, so whatever the last bucket holds is communicated and updated after the backward's
-- last kernel; small buckets there shorten that tail, while the large ones before it keep the number of
-- collectives low.
local M = {}

local MiB = 1024 * 1024

local function number_field(opts, key, default, ok, what)
  local v = opts[key]
  if v == nil then v = default end
  if type(v) ~= "number" or v ~= v or not ok(v) then
    error(string.format("buckets.sized: %s must be %s, got %s", key, what, tostring(opts[key])), 3)
  end
  return v
end

-- The parameters grouped by fused weight, in gradient-ready order: { { names = {...}, bytes = n }, ... }.
local function units_of(params)
  local units, last = {}, nil
  for _, p in ipairs(params) do
    local key = p.unit or p.name
    if key ~= last then
      units[#units + 1] = { names = {}, bytes = 0 }
      last = key
    end
    local u = units[#units]
    u.names[#u.names + 1] = p.name
    u.bytes = u.bytes + p.bytes
  end
  return units
end

function M.sized(opts)
  if type(opts) ~= "table" then
    error("buckets.sized expects a table such as { mb = 100, tail_mb = 100 }, got " .. tostring(opts), 2)
  end
  for k in pairs(opts) do
    if k ~= "mb" and k ~= "tail_mb" and k ~= "tail_bucket_mb" then
      error("buckets.sized: unknown field " .. tostring(k) .. " (mb, tail_mb, tail_bucket_mb)", 2)
    end
  end
  local mb = number_field(opts, "mb", nil, function(v) return v > 0 end, "a number > 0")
  local tail_mb = number_field(opts, "tail_mb", 0, function(v) return v >= 0 end, "a number >= 0")
  local tail_cap = number_field(opts, "tail_bucket_mb", 16, function(v) return v >= 0 end, "a number >= 0")
  return function(params)
    local units = units_of(params)
    -- where the tail begins: the first unit that begins within the last tail_mb MiB
    local first_tail, after = #units + 1, 0
    for i = #units, 1, -1 do
      if after >= tail_mb * MiB then break end
      first_tail, after = i, after + units[i].bytes
    end
    local buckets, current, fill = {}, nil, 0
    for i, u in ipairs(units) do
      local cap = (i >= first_tail and tail_cap or mb) * MiB
      local new_region = i == first_tail
      if current == nil or new_region or (fill > 0 and fill + u.bytes > cap) then
        current, fill = {}, 0
        buckets[#buckets + 1] = current
      end
      for _, name in ipairs(u.names) do current[#current + 1] = name end
      fill = fill + u.bytes
    end
    return buckets
  end
end

return M
