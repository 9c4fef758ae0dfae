-- schedules/tensor_2.lua: tensor parallelism on 2 GPUs (mesh = { tensor = 2 }): the large transformer
-- (d_model 1280, d_ff 5120, 36 layers, 20 heads; XL's 25 heads do not split in two) cut Megatron-style,
-- 10 heads and 2560 hidden units of each block and 5000 vocabulary rows on each GPU, the two GPUs training
-- the same 4 sequences of 512 tokens per step; context 512, vocab 10000, random tokens, bf16, AdamW lr 3e-4
-- betas (0.9, 0.95) wd 0.1, 20 steps of which the first 5 are untimed warmup (as xl_setup.lua).
-- Compile: ddpc schedules/tensor_2.lua -o plan.bin; run: ddprun plan.bin --nproc 2 (or srun -n 2).
-- docs/SCHEDULES.md ("Device meshes and tensor parallelism") and docs/PERFORMANCE.md (against data = 2,
-- FSDP and PyTorch's DTensor tensor parallelism).
local models = require "models"
return schedule {
  model     = models.transformer("large", { context = 512, vocab = 10000 }),
  data      = { global_batch = 4, tokens = "random", seed = 1 },
  precision = "bf16",
  optimizer = adamw { lr = 3e-4, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
  parallel  = ddp { ranks = 2 },
  mesh      = { tensor = 2 },
  steps = 20, warmup = 5, seed = 1,
}
