# tests/unit/plan/bounds.cmake: the plan reader proves every instruction in bounds (issue 11): corrupted
# fields re-encoded with a valid CRC are refused, naming rank, instruction, op and slot (test_plan_bounds).
ddp_c_test(test_plan_bounds SOURCES test_plan_bounds.c ../../fixtures/plan_fixture.c LIBS ddpcompiler ddpruntime LABELS cpu)
