# tests/unit/explain/explain.cmake: the `ddpc explain` simulator, cost model, memory classes and profile
# parser on hand-made plans (compiler/explain/).
ddp_c_test(test_sim SOURCES test_sim.c LIBS ddpcompiler LABELS cpu)
include(${CMAKE_CURRENT_LIST_DIR}/predict.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/cost_model.cmake)
