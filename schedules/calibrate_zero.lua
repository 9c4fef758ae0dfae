-- schedules/calibrate_zero.lua: the calibration plan for reduce-scatter and all-gather on 2 ranks
-- (docs/EXPLAIN.md, "Calibrating a profile"): the model of calibrate.lua under ZeRO-2 with 1 MB buckets,
-- so each bucket is reduce-scattered and all-gathered at its own size. Other rank counts: --set
-- parallel.ranks=N.
local calibrate_setup = require "calibrate_setup"
return schedule(calibrate_setup(2, ddp({ ranks = 2, sync = "bucketed", bucket_mb = 1, shard = "zero2" }, 1)))
