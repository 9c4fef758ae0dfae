-- schedules/lib/xl_ddp.lua: the standard DDP benchmark of the seeds ("1 node x 2 GPUs, XL model size"):
-- XL transformer (d_model 1600, d_ff 6400, 48 layers, 25 heads), context 512, vocab 10000, 4 sequences
-- per rank (global batch 8), random tokens, bf16, AdamW lr 3e-4 betas (0.9, 0.95) wd 0.1, 20 steps of
-- which the first 5 are untimed warmup (the fields come from xl_setup.lua). It returns a function of the
-- ddp{} options that vary between experiments (sync, bucket_mb, buckets, overlap, optimizer_overlap,
-- shard, grad_dtype, ranks) and gives back the schedule's fields, so a schedule reads:
--     local xl_ddp = require "xl_ddp"
--     return schedule(xl_ddp { sync = "bucketed", bucket_mb = 10 })
-- ddp{} is built with `1` as its second argument: its errors point at the line calling xl_ddp.
local xl_setup = require "xl_setup"

return function(opts)
  if type(opts) ~= "table" then
    error("xl_ddp expects a table of ddp{} options such as { sync = \"flat\" }, got " .. tostring(opts), 2)
  end
  local d = { ranks = 2 }
  for k, v in pairs(opts) do d[k] = v end
  if d.overlap == nil and (d.sync == "individual" or d.sync == "bucketed") then d.overlap = "backward" end
  return xl_setup(d.ranks, ddp(d, 1))
end
