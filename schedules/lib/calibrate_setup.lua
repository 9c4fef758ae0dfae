-- schedules/lib/calibrate_setup.lua: the fields of the calibration schedules (schedules/calibrate*.lua)
-- for a given parallel layout: a transformer named "calibrate" (the name marks a calibration plan for
-- `ddprun --calibrate`), d_model 2048, d_ff 8192, 4 layers, 32 heads of 64, vocab 10000, context 512,
-- bf16, 8 sequences of 512 per rank, AdamW, 3 warm-up steps then 20: every other one timed instruction by
-- instruction (10), the others as any run steps (their step times against the traced ones' price the
-- tracing's events).
--     local calibrate_setup = require "calibrate_setup"
--     return schedule(calibrate_setup(2, ddp({ ranks = 2, sync = "individual" }, 1)))
return function(ranks, parallel)
  return {
    model     = transformer({ name = "calibrate", d_model = 2048, d_ff = 8192, layers = 4, heads = 32,
                              vocab = 10000, context = 512, rope_theta = 10000 }, 2),
    data      = { global_batch = 8 * ranks, tokens = "random", seed = 1 },
    precision = "bf16",
    optimizer = adamw { lr = 3e-4, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
    parallel  = parallel,
    steps = 23, warmup = 3, seed = 1,
  }
end
