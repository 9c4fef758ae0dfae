# tests/unit/inspect/inspect.cmake: `ddpc inspect`'s sharding analysis and memory per rank, and the memory
# classes of `ddpc explain`, on hand-made sharded plans (compiler/inspect/inspect_shard*.c).
ddp_c_test(test_inspect_shard SOURCES test_inspect_shard.c LIBS ddpcompiler LABELS cpu)
