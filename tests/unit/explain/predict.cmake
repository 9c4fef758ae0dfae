# tests/unit/explain/predict.cmake: the compile-time prediction stored in the plan's meta
# (compiler/explain/predict.c) on hand-made plans.
ddp_c_test(test_predict SOURCES test_predict.c ../../fixtures/plan_fixture.c LIBS ddpcompiler LABELS cpu)
