# tests/unit/frontend/fsdp.cmake: sharding levels in the front end (ddp{shard = "zero2"/"zero3"}, fsdp{...},
# units functions) on the shipped schedules and the bad ones in tests/fixtures/schedules_bad/.
ddp_c_test(test_fsdp SOURCES test_fsdp.c schedule_load.c LIBS ddpcompiler LABELS cpu)
