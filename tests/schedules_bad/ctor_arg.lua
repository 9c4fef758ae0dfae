-- tests/schedules_bad/ctor_arg.lua: constructors take a table of fields (line 5).
return schedule {
  model = transformer { d_model = 64, d_ff = 128, layers = 2, heads = 4, vocab = 256, context = 32 },
  data = { global_batch = 8 },
  optimizer = adamw(3e-4),
  steps = 1,
}
