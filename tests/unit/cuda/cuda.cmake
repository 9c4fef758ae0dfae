# tests/unit/cuda/cuda.cmake: the CUDA executor (runtime/cuda/) and the kernel templates.
#   test_cuda_exec (cpu): probe and construction fail cleanly without a GPU; argument errors; NCCL_NVLS_ENABLE.
#   test_cuda_exec_gpu (gpu): GEMM layouts and dtypes against ref_gemm, memory/stream/event/timer ops,
#     INIT_TENSOR and LOAD_BATCH against their host functions, a KERNEL from an NVRTC-built CUBIN, graph mode, load-time error messages, and on a
#     machine with 2 GPUs the collectives and dead-peer detection with 2 ranks (exits 77 without a GPU).
#   test_templates_compile (cpu): every template specialises and compiles to sm_90a CUBIN with NVRTC.
#   gpu_kernels (gpu): every op on the GPU against the CPU reference (exits 77 = SKIP without a GPU); the
#   persistent and bad-op cases at the end.
ddp_c_test(test_cuda_exec SOURCES test_cuda_exec.c LIBS ddpcudaexectest ddpruntime LABELS cpu)
ddp_c_test(test_cuda_exec_gpu SOURCES test_cuda_exec_gpu.c LIBS ddpcudaexectest ddpruntime CUDA::nvrtc LABELS gpu)
set_tests_properties(test_cuda_exec_gpu PROPERTIES TIMEOUT 600)

ddp_c_test(test_templates_compile SOURCES test_templates_compile.c
  LIBS ddpkernelcases ddpcompiler LABELS cpu)
set_tests_properties(test_templates_compile PROPERTIES TIMEOUT 900)

ddp_c_test(gpu_kernels SOURCES gpu_kernels.c
  LIBS ddpkernelcases ddpcompiler ddpref ddpruntime LABELS gpu)
set_tests_properties(gpu_kernels PROPERTIES TIMEOUT 1800)

# gpu_kernels_persistent (gpu): the TMA attention kernels (the forward and dQ forced onto them at every T) with
# DDP_PERSISTENT_BLOCKS=3, so each block walks many work tiles of every shape.
add_test(NAME gpu_kernels_persistent COMMAND gpu_kernels --op ATTN_FWD,ATTN_BWD_DKV,ATTN_BWD_DQ)
set_tests_properties(gpu_kernels_persistent PROPERTIES LABELS gpu SKIP_RETURN_CODE ${DDP_SKIP_CODE} TIMEOUT 1800
  ENVIRONMENT "DDPC_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache;DDP_SOURCE_DIR=${CMAKE_SOURCE_DIR};DDP_PERSISTENT_BLOCKS=3;DDP_TUNE_FWD_WGMMA=4;DDP_TUNE_DQ_WGMMA=4")
# gpu_kernels_bad_op (cpu): an unknown --op name is one line and exit 2, before any GPU is looked for.
add_test(NAME gpu_kernels_bad_op COMMAND bash -c "\"$0\" --op ATTN_FWD,ATTN_FOO 2>&1 >/dev/null | grep -qx \"gpu_kernels: --op: 'ATTN_FOO' is not an op name (plan/ops.h, e.g. ATTN_FWD)\"; s=(\${PIPESTATUS[@]}); [ \${s[0]} = 2 ] && [ \${s[1]} = 0 ]" $<TARGET_FILE:gpu_kernels>)
set_tests_properties(gpu_kernels_bad_op PROPERTIES LABELS cpu)
