# tests/e2e/pipeline.cmake: pipelines on the reference executor against one rank (test_pipeline_equivalence.sh).
ddp_sh_test(test_pipeline_equivalence SCRIPT test_pipeline_equivalence.sh LABELS cpu)
set_property(TEST test_pipeline_equivalence APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
