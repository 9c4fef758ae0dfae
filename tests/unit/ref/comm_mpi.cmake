# tests/unit/ref/comm_mpi.cmake: test_comm_mpi, the process backend's collectives (comm_mpi.c) against the
# threads backend (comm_ref.c), bit for bit. It needs several processes, so it is built here and run by
# tests/e2e/test_mpi.sh under `mpirun -n 3` (TEST_COMM_MPI names the binary there).
add_executable(test_comm_mpi ${CMAKE_CURRENT_LIST_DIR}/test_comm_mpi.c ${DDP_TEST_FIXTURES}/check.c)
target_include_directories(test_comm_mpi PRIVATE ${DDP_TEST_FIXTURES})
target_link_libraries(test_comm_mpi PRIVATE ddpruntime)
