-- schedules/calibrate_ddp.lua: the calibration plan for all-reduce on 2 ranks (docs/EXPLAIN.md,
-- "Calibrating a profile"): the model of calibrate.lua with one all-reduce per gradient (sync "individual",
-- overlapped with the backward), so the sizes run from 8 KB (a norm weight's fp32 gradient) to 82 MB (the
-- embedding's), which the alpha-beta fit needs. Other rank counts: --set parallel.ranks=N.
local calibrate_setup = require "calibrate_setup"
return schedule(calibrate_setup(2, ddp({ ranks = 2, sync = "individual", overlap = "backward" }, 1)))
