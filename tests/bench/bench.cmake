# tests/bench/bench.cmake: ddpbench_kernels, the kernel benchmark (an executable, not a test).
add_executable(ddpbench_kernels ${CMAKE_CURRENT_LIST_DIR}/kernel_bench.c)
target_include_directories(ddpbench_kernels PRIVATE ${DDP_TEST_FIXTURES})
target_link_libraries(ddpbench_kernels PRIVATE ddpkernelcases ddpcompiler ddpruntime)
