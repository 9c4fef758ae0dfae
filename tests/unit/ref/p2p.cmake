# tests/unit/ref/p2p.cmake: SEND/RECV on the reference executor (issue 13): test_p2p runs hand-built plans
# (tests/fixtures/p2p_plan.c) with ranks as threads; test_p2p_mpi runs the same plans as processes and is
# run by tests/e2e/test_mpi_p2p.sh under mpirun (TEST_P2P_MPI names the binary there).
ddp_c_test(test_p2p SOURCES test_p2p.c ../../fixtures/p2p_plan.c ../../fixtures/plan_fixture.c LIBS ddpruntime
  LABELS cpu)
set_tests_properties(test_p2p PROPERTIES TIMEOUT 180)
add_executable(test_p2p_mpi ${CMAKE_CURRENT_LIST_DIR}/test_p2p_mpi.c ${DDP_TEST_FIXTURES}/p2p_plan.c
  ${DDP_TEST_FIXTURES}/plan_fixture.c ${DDP_TEST_FIXTURES}/check.c)
target_include_directories(test_p2p_mpi PRIVATE ${DDP_TEST_FIXTURES})
target_link_libraries(test_p2p_mpi PRIVATE ddpruntime)
