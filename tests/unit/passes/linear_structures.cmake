# tests/unit/passes/linear_structures.cmake: occupancy.h, conflicts.h and string interning against the scans
# they replaced.
ddp_c_test(test_linear_structures SOURCES test_linear_structures.c LIBS ddpcompiler LABELS cpu)
