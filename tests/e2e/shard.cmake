# tests/e2e/shard.cmake: sharding levels (zero2, zero3, fsdp{}) through ddpc: bad schedules refused in one
# line, the plan summary's parallel line (test_shard_schedules.sh).
ddp_sh_test(test_shard_schedules SCRIPT test_shard_schedules.sh LABELS cpu)
