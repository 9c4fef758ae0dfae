# tests/unit/model/model.cmake: whole models compiled and run on the reference executor: gradients against
# finite differences, SGD on a toy model, the schedule's `mode`.
ddp_c_test(test_model_gradcheck SOURCES test_model_gradcheck.c LIBS ddpcompiler ddpruntime LABELS cpu)
ddp_c_test(test_toy_sgd SOURCES test_toy_sgd.c LIBS ddpcompiler ddpruntime LABELS cpu)
ddp_c_test(test_modes SOURCES test_modes.c LIBS ddpcompiler ddpruntime LABELS cpu)
include(${CMAKE_CURRENT_LIST_DIR}/fuse.cmake)
