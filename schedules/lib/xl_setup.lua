-- schedules/lib/xl_setup.lua: the XL setup of the seeds' DDP benchmark ("1 node x 2 GPUs, XL model size"),
-- shared by xl_ddp.lua and xl_fsdp.lua: XL transformer (d_model 1600, d_ff 6400, 48 layers, 25 heads),
-- context 512, vocab 10000, 4 sequences per rank, random tokens, bf16, AdamW lr 3e-4 betas (0.9, 0.95)
-- wd 0.1, 20 steps of which the first 5 are untimed warmup. xl_setup(ranks, parallel) returns the
-- schedule's fields with the given parallel layout (a ddp{} or fsdp{} table).
local models = require "models"

return function(ranks, parallel)
  return {
    model     = models.transformer("xl", { context = 512, vocab = 10000 }),
    data      = { global_batch = 4 * ranks, tokens = "random", seed = 1 },
    precision = "bf16",
    optimizer = adamw { lr = 3e-4, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
    parallel  = parallel,
    steps = 20, warmup = 5, seed = 1,
  }
end
