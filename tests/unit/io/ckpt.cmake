# tests/unit/io/ckpt.cmake: checkpoints (runtime/io/checkpoint.c, ckpt_plan.c) through the fake executor of
# ckpt_fake.c: plans without pieces (test_checkpoint) and sharded plans described by pieces (test_ckpt_pieces).
foreach(t test_checkpoint test_ckpt_pieces)
  ddp_c_test(${t} SOURCES ${t}.c ckpt_fake.c LIBS ddpruntime LABELS cpu)
endforeach()
