-- tests/schedules_bad/batch_ranks.lua: 7 sequences cannot be split over 2 ranks; data is a plain table,
-- so the error reports the schedule{} line (2).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 7 },
  optimizer = sgd { lr = 0.1 },
  parallel = ddp { ranks = 2, sync = "flat" },
  steps = 1,
}
