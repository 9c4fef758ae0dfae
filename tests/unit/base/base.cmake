# tests/unit/base/base.cmake: base/args.c (number parsing, the output check, getopt messages) and the
# file refusals the command lines rely on.
ddp_c_test(test_args SOURCES test_args.c LIBS ddpbase LABELS cpu)
