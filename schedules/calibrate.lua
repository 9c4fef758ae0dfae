-- schedules/calibrate.lua: the one-GPU calibration plan of `ddprun PLAN --calibrate` (docs/EXPLAIN.md,
-- "Calibrating a profile"; the model and data are in lib/calibrate_setup.lua). Its model is deliberately
-- not one the profile is used to predict (XL is d_model 1600, 48 layers, 25 heads): d_model 2048, d_ff 8192,
-- 4 layers, 32 heads of 64 (attention at T = 512, head dim 64), vocab 10000, bf16, batch 8. Its step has
-- bf16 GEMMs of every shape of a block and of the vocabulary projection, the attention kernels and the
-- memory-bound kernels from a few KB (norm weights) to hundreds of MB (the logits, AdamW on the embedding).
-- The optimizer runs on the compute stream (no side-stream overlap), so no two kernels share the device
-- while they are timed. Other shapes: --set model.d_model=..., model.heads=..., model.context=...
-- Collectives: calibrate_ddp.lua (all-reduce), calibrate_zero.lua (reduce-scatter, all-gather).
local calibrate_setup = require "calibrate_setup"
return schedule(calibrate_setup(1, single { optimizer_overlap = false }))
