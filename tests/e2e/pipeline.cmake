# tests/e2e/pipeline.cmake: pipeline{} through ddpc: bad pipeline schedules refused in one line, the plan
# summary's parallel line (test_pipeline_schedules.sh).
ddp_sh_test(test_pipeline_schedules SCRIPT test_pipeline_schedules.sh LABELS cpu)
