# tests/cuda_exec.cmake: the CUDA executor (runtime/cuda/exec_cuda*.c).
#   test_cuda_exec (cpu): probe and construction fail cleanly without a GPU; argument errors; NCCL_NVLS_ENABLE.
#   test_cuda_exec_gpu (gpu): GEMM layouts and dtypes against ref_gemm, memory/stream/event/timer ops,
#     INIT_TENSOR and LOAD_BATCH against their host functions, a KERNEL from an NVRTC-built CUBIN, graph mode, load-time error messages, and on a
#     machine with 2 GPUs the collectives and dead-peer detection with 2 ranks (exits 77 without a GPU).
add_library(ddpcudaexectest STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cuda_exec_util.c)
target_include_directories(ddpcudaexectest PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(ddpcudaexectest PUBLIC ddpplan)

ddp_c_test(test_cuda_exec SOURCES test_cuda_exec.c LIBS ddpcudaexectest ddpruntime LABELS cpu)
ddp_c_test(test_cuda_exec_gpu SOURCES test_cuda_exec_gpu.c LIBS ddpcudaexectest ddpruntime CUDA::nvrtc LABELS gpu)
set_tests_properties(test_cuda_exec_gpu PROPERTIES TIMEOUT 600)
