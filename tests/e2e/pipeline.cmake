# tests/e2e/pipeline.cmake: pipelines: pipeline{} through ddpc (bad pipeline schedules refused in one line,
# the plan summary's parallel line: test_pipeline_schedules.sh) and on the reference executor against one
# rank (test_pipeline_equivalence.sh).
ddp_sh_test(test_pipeline_schedules SCRIPT test_pipeline_schedules.sh LABELS cpu)
ddp_sh_test(test_pipeline_equivalence SCRIPT test_pipeline_equivalence.sh LABELS cpu)
set_property(TEST test_pipeline_equivalence APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
