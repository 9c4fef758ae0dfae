# tests/unit/ref/fused.cmake: the fused reference kernels (RMSNORM_BWD_CAST) bit for bit against the unfused
# pair they replace, and their footprints.
ddp_c_test(ref_ops_fused SOURCES test_ref_fused.c LIBS ddpref ddpplan LABELS cpu)
