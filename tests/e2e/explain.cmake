# tests/e2e/explain.cmake: `ddpc explain` on compiled shipped plans (test_explain.sh).
ddp_sh_test(test_explain SCRIPT test_explain.sh LABELS cpu)
include(${CMAKE_CURRENT_LIST_DIR}/explain_compare.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/calibrate.cmake)
