# tests/plan.cmake: the plan library (format, reader refusals, launch check) and `ddpc inspect`.
# test_inspect compiles the inspect sources directly with ddpplan, so it does not depend on the rest of
# the compiler library building. Paths are relative to this file, so the fragment works from any
# including directory.
set(DDP_PLAN_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(DDP_PLAN_COMPILER_DIR ${CMAKE_CURRENT_LIST_DIR}/../compiler)

ddp_c_test(test_plan_io
  SOURCES ${DDP_PLAN_TEST_DIR}/test_plan_io.c ${DDP_PLAN_TEST_DIR}/plan_fixture.c
  LIBS ddpplan LABELS cpu)
target_include_directories(test_plan_io PRIVATE ${DDP_PLAN_TEST_DIR})

ddp_c_test(test_inspect
  SOURCES ${DDP_PLAN_TEST_DIR}/test_inspect.c ${DDP_PLAN_TEST_DIR}/plan_fixture.c
          ${DDP_PLAN_COMPILER_DIR}/inspect.c ${DDP_PLAN_COMPILER_DIR}/inspect_program.c
  LIBS ddpplan LABELS cpu)
target_include_directories(test_inspect PRIVATE ${DDP_PLAN_TEST_DIR} ${DDP_PLAN_COMPILER_DIR})
