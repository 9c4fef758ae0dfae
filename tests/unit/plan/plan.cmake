# tests/unit/plan/plan.cmake: plan.bin round trip and every refusal (test_plan_io), and `ddpc inspect`
# (test_inspect), on a synthetic plan (fixtures/plan_fixture.c) holding every opcode.
ddp_c_test(test_plan_io SOURCES test_plan_io.c ../../fixtures/plan_fixture.c LIBS ddpplan LABELS cpu)
ddp_c_test(test_inspect SOURCES test_inspect.c ../../fixtures/plan_fixture.c LIBS ddpcompiler LABELS cpu)
include(${CMAKE_CURRENT_LIST_DIR}/inspect_json.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/bounds.cmake)
