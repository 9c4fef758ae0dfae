# tests/unit/io/st_scaling.cmake: the safetensors reader's cost grows linearly with the header's entries.
ddp_c_test(test_st_scaling SOURCES test_st_scaling.c LIBS ddpruntime LABELS cpu)
