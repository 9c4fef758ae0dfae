# tests/unit/scaling/scaling.cmake: the IsoFLOPs fits of compiler/scaling (ddpc scaling fit and plan).
ddp_c_test(test_scaling_fit SOURCES test_scaling_fit.c LIBS ddpcompiler LABELS cpu)
