# tests/e2e/e2e.cmake: the shell tests driving ddpc and ddprun end to end (lib.sh: their shared helpers).
# The cpu ones run on the reference executor; gpu_step and gpu_ddp (label gpu) run whole plans on the GPU
# (SKIP without a GPU, or without 2 GPUs for DDP).
ddp_sh_test(test_schedules_compile SCRIPT test_schedules_compile.sh LABELS cpu)
ddp_sh_test(test_train_pattern SCRIPT test_train_pattern.sh LABELS cpu)
ddp_sh_test(test_resume SCRIPT test_resume.sh LABELS cpu)
ddp_sh_test(test_bad_input SCRIPT test_bad_input.sh LABELS cpu)
ddp_sh_test(test_ddp_equivalence SCRIPT test_ddp_equivalence.sh LABELS cpu)
ddp_sh_test(test_trace SCRIPT test_trace.sh LABELS cpu)
ddp_sh_test(test_modes_cli SCRIPT test_modes_cli.sh LABELS cpu)
ddp_sh_test(gpu_step SCRIPT gpu_step.sh LABELS gpu)
ddp_sh_test(gpu_ddp SCRIPT gpu_ddp.sh LABELS gpu)
set_property(TEST test_ddp_equivalence test_resume gpu_ddp APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
# The sandbox's time limit (watchdog), __gc/xpcall refusals and pattern budget, through ddpc.
ddp_sh_test(test_sandbox_limits SCRIPT test_sandbox_limits.sh LABELS cpu)
set_tests_properties(test_sandbox_limits PROPERTIES TIMEOUT 120)
include(${CMAKE_CURRENT_LIST_DIR}/cli.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/ckpt.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mpi.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/install.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/scaling.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/explain.cmake)
