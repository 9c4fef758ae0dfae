# tests/frontend.cmake: the Lua front end (sandbox, constructors, validation, --set, bucket policies) on
# every shipped schedule and on the bad schedules in tests/schedules_bad/.
ddp_c_test(test_frontend SOURCES test_frontend.c LIBS ddpcompiler LABELS cpu)
target_include_directories(test_frontend PRIVATE ${CMAKE_SOURCE_DIR}/compiler/frontend)
# The sandbox's time limit (watchdog), __gc/xpcall refusals and pattern budget, through ddpc (issue 11).
ddp_sh_test(test_sandbox_limits SCRIPT test_sandbox_limits.sh LABELS cpu)
set_tests_properties(test_sandbox_limits PROPERTIES TIMEOUT 120)
