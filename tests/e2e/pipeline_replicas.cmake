# tests/e2e/pipeline_replicas.cmake: pipelines x data-parallel replicas (communicator groups) on the
# reference executor against one rank (test_pipeline_replicas.sh).
ddp_sh_test(test_pipeline_replicas SCRIPT test_pipeline_replicas.sh LABELS cpu)
set_property(TEST test_pipeline_replicas APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
