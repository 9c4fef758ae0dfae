# tests/data_ckpt.cmake: the batch source (runtime/data.c, runtime/rng.h), the safetensors reader and writer
# and checkpoints over a fake executor. The tests compile their runtime sources directly with ddpplan, so
# they do not depend on the rest of the runtime library building.
set(DDP_DC_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(DDP_DC_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR}/../runtime)

ddp_c_test(test_data
  SOURCES ${DDP_DC_TEST_DIR}/test_data.c ${DDP_DC_RUNTIME_DIR}/data.c
  LIBS ddpplan m LABELS cpu)
ddp_c_test(test_safetensors
  SOURCES ${DDP_DC_TEST_DIR}/test_safetensors.c ${DDP_DC_RUNTIME_DIR}/safetensors.c
  LIBS ddpplan LABELS cpu)
ddp_c_test(test_checkpoint
  SOURCES ${DDP_DC_TEST_DIR}/test_checkpoint.c ${DDP_DC_RUNTIME_DIR}/checkpoint.c
          ${DDP_DC_RUNTIME_DIR}/safetensors.c
  LIBS ddpplan LABELS cpu)
foreach(t test_data test_safetensors test_checkpoint)
  target_include_directories(${t} PRIVATE ${DDP_DC_RUNTIME_DIR})
endforeach()
