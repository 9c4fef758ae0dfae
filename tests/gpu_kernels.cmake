# tests/gpu_kernels.cmake: the kernel templates. test_templates_compile (cpu): every template specialises
# and compiles to sm_90a CUBIN with NVRTC; gpu_kernels (gpu): every op on the GPU against the CPU reference
# (exits 77 = SKIP without a GPU); ddpbench_kernels: the kernel benchmark (an executable, not a test).
add_library(ddpkernelcases STATIC ${CMAKE_CURRENT_SOURCE_DIR}/kernel_cases.c)
target_include_directories(ddpkernelcases PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(ddpkernelcases PUBLIC ddpplan m)

ddp_c_test(test_templates_compile SOURCES test_templates_compile.c
  LIBS ddpkernelcases ddpcompiler LABELS cpu)
set_tests_properties(test_templates_compile PROPERTIES TIMEOUT 900)

ddp_c_test(gpu_kernels SOURCES gpu_kernels.c
  LIBS ddpkernelcases ddpcompiler ddpref ddpruntime LABELS gpu)
set_tests_properties(gpu_kernels PROPERTIES TIMEOUT 1800)

add_executable(ddpbench_kernels bench/kernel_bench.c)
target_include_directories(ddpbench_kernels PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(ddpbench_kernels PRIVATE ddpkernelcases ddpcompiler ddpruntime)
