-- schedules/fsdp_10b.lua: a model that does not fit on one GPU with DDP: the 10b transformer (d_model 5120,
-- 32 layers, 40 heads, d_ff 13824, 10.25e9 parameters; context 512, vocab 10000) trained with FSDP on 2
-- ranks, 4 sequences per rank, bf16 compute, fp32 gradients and AdamW state, everything sharded. At 16+
-- bytes per parameter one GPU would need about 197 GB; the planner's per-rank prediction on 2 ranks is
-- about 107 GB. `ddpc schedules/fsdp_10b.lua -o p.bin --device-memory 141GB` compiles it for 2 x H200;
-- with `--set parallel.ranks=1` the same command refuses it and prints the predicted bytes.
local models = require "models"
local ranks = 2
return schedule {
  model     = models.transformer("10b", { context = 512, vocab = 10000 }),
  data      = { global_batch = 4 * ranks, tokens = "random", seed = 1 },
  precision = "bf16",
  optimizer = adamw { lr = 1e-4, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
  parallel  = fsdp { ranks = ranks, prefetch = 1, reshard_after_forward = true },
  steps = 10, warmup = 3, seed = 1,
}
