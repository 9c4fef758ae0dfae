# tests/unit/model/fuse.cmake: the builder's fusion decisions (compiler/model/fuse.c) on hand-built programs.
ddp_c_test(test_fuse SOURCES test_fuse.c LIBS ddpcompiler LABELS cpu)
