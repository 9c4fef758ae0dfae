# tests/unit/ref/fused.cmake: the fused reference kernels (RMSNORM_BWD_CAST, the attention backward with
# RoPE, and ATTN_BWD_FUSED + ATTN_DQ_STORE) bit for bit against the unfused pairs they replace, and their
# footprints.
ddp_c_test(ref_ops_fused SOURCES test_ref_fused.c LIBS ddpref ddpplan LABELS cpu)
ddp_c_test(ref_attn_fused SOURCES test_ref_attn_fused.c LIBS ddpref ddpplan LABELS cpu)
