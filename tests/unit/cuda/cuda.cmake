# tests/unit/cuda/cuda.cmake: the CUDA executor (runtime/cuda/) and the kernel templates.
#   test_cuda_exec (cpu): probe and construction fail cleanly without a GPU; argument errors; NCCL_NVLS_ENABLE.
#   test_cuda_exec_gpu (gpu): GEMM layouts and dtypes against ref_gemm, memory/stream/event/timer ops,
#     INIT_TENSOR and LOAD_BATCH against their host functions, a KERNEL from an NVRTC-built CUBIN, graph mode, load-time error messages, and on a
#     machine with 2 GPUs the collectives and dead-peer detection with 2 ranks (exits 77 without a GPU).
#   test_templates_compile (cpu): every template specialises and compiles to sm_90a CUBIN with NVRTC.
#   gpu_kernels (gpu): every op on the GPU against the CPU reference (exits 77 = SKIP without a GPU).
ddp_c_test(test_cuda_exec SOURCES test_cuda_exec.c LIBS ddpcudaexectest ddpruntime LABELS cpu)
ddp_c_test(test_cuda_exec_gpu SOURCES test_cuda_exec_gpu.c LIBS ddpcudaexectest ddpruntime CUDA::nvrtc LABELS gpu)
set_tests_properties(test_cuda_exec_gpu PROPERTIES TIMEOUT 600)

ddp_c_test(test_templates_compile SOURCES test_templates_compile.c
  LIBS ddpkernelcases ddpcompiler LABELS cpu)
set_tests_properties(test_templates_compile PROPERTIES TIMEOUT 900)

ddp_c_test(gpu_kernels SOURCES gpu_kernels.c
  LIBS ddpkernelcases ddpcompiler ddpref ddpruntime LABELS gpu)
set_tests_properties(gpu_kernels PROPERTIES TIMEOUT 1800)
