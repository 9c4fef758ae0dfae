-- tests/schedules_bad/bucket_notlist.lua: a bucket function that returns a number (ddp{} on line 6).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = sgd { lr = 0.1 },
  parallel = ddp { ranks = 2, sync = "bucketed", buckets = function(params)
    return 3
  end },
  steps = 1,
}
