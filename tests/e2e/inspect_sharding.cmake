# tests/e2e/inspect_sharding.cmake: `ddpc inspect`'s sharding and memory-per-rank sections on compiled plans.
ddp_sh_test(test_inspect_sharding SCRIPT test_inspect_sharding.sh LABELS cpu)
