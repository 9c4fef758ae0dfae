# tests/e2e/pipeline_tensor.cmake: pipelines x tensor parallelism (mesh = { data, tensor, pipeline }) on the
# reference executor against one rank (test_pipeline_tensor.sh).
ddp_sh_test(test_pipeline_tensor SCRIPT test_pipeline_tensor.sh LABELS cpu)
set_property(TEST test_pipeline_tensor APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
