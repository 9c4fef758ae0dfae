-- schedules/lib/xl_pipeline.lua: the XL setup of xl_ddp.lua (xl_setup.lua: XL, context 512, 4 sequences
-- per rank, bf16, AdamW, 20 steps with 5 warmup) with a pipeline instead of DDP: the 48 blocks cut into
-- stages (the compiler balances them unless `split` is given), each replica's batch cut into microbatches.
-- It returns a function of the pipeline{} options (stages, default 2; replicas, microbatches, schedule,
-- virtual_stages, split, ...) giving back the schedule's fields; the global batch is 16 sequences per
-- replica, so 4, 8 and 16 microbatches all divide it (the benchmark's range):
--     local xl_pipeline = require "xl_pipeline"
--     return schedule(xl_pipeline { stages = 2, microbatches = 8, schedule = "1f1b" })
-- pipeline{} is built with `1` as its second argument: its errors point at the line calling xl_pipeline.
local xl_setup = require "xl_setup"

return function(opts)
  if type(opts) ~= "table" then
    error("xl_pipeline expects a table of pipeline{} options such as { stages = 2 }, got " .. tostring(opts), 2)
  end
  local d = { stages = 2 }
  for k, v in pairs(opts) do d[k] = v end
  local ranks = 2
  if math.type(d.stages) == "integer" and math.type(d.replicas or 1) == "integer" then
    ranks = d.stages * (d.replicas or 1)
  end
  local t = xl_setup(ranks, pipeline(d, 1))
  t.data.global_batch = 16 * (math.type(d.replicas) == "integer" and d.replicas or 1)
  return t
end
