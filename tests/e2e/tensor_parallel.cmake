# tests/e2e/tensor_parallel.cmake: tensor parallelism (mesh = { data, tensor }) on the reference executor
# against one rank (test_tensor_parallel.sh).
ddp_sh_test(test_tensor_parallel SCRIPT test_tensor_parallel.sh LABELS cpu)
set_property(TEST test_tensor_parallel APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
