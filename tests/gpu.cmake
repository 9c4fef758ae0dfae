# tests/gpu.cmake: whole-plan GPU tests (label gpu; SKIP without a GPU, or without 2 GPUs for DDP).
ddp_sh_test(gpu_step SCRIPT gpu_step.sh LABELS gpu)
ddp_sh_test(gpu_ddp SCRIPT gpu_ddp.sh LABELS gpu)
set_property(TEST gpu_ddp APPEND PROPERTY ENVIRONMENT "ST_COMPARE=$<TARGET_FILE:st_compare>")
