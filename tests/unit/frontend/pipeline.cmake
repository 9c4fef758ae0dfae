# tests/unit/frontend/pipeline.cmake: pipeline{} in the front end (stages, replicas, microbatches, schedules,
# virtual stages, split lists and functions) on the shipped pipeline schedules and the bad ones in
# tests/fixtures/schedules_bad/pipe_*.lua.
ddp_c_test(test_pipeline SOURCES test_pipeline.c schedule_load.c LIBS ddpcompiler LABELS cpu)
