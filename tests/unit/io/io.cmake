# tests/unit/io/io.cmake: the batch source (runtime/data.h rule), safetensors reading/writing, checkpoints.
foreach(t test_data test_safetensors)
  ddp_c_test(${t} SOURCES ${t}.c LIBS ddpruntime LABELS cpu)
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/ckpt.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/fifo.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/st_scaling.cmake)
