# tests/unit/plan/inspect_json.cmake: `ddpc inspect --json` on the synthetic plan (fixtures/plan_fixture.c).
ddp_c_test(test_inspect_json SOURCES test_inspect_json.c ../../fixtures/plan_fixture.c LIBS ddpcompiler LABELS cpu)
