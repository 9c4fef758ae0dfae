# tests/e2e/shard.cmake: sharding levels (zero2, zero3, fsdp{}) through ddpc: bad schedules refused in one
# line, the plan summary's parallel line (test_shard_schedules.sh).
ddp_sh_test(test_shard_schedules SCRIPT test_shard_schedules.sh LABELS cpu)
# The ZeRO levels against 1 rank, across rank counts, FSDP options and checkpoint layouts (reference executor).
ddp_sh_test(test_zero_equivalence SCRIPT test_zero_equivalence.sh LABELS cpu)
set_property(TEST test_zero_equivalence APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
