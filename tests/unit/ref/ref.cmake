# tests/unit/ref/ref.cmake: the reference kernels (runtime/ref/ref_*.c): forward values against direct
# formulas, gradients against central finite differences in double (fixtures/gradcheck.c), acc flags,
# aliasing, determinism, GEMM speed; vocab_parallel: XENT_VP_STATS + XENT_VP against XENT on the whole
# logits split over ranks, the partial embedding against the whole table.
foreach(area norm attention loss gemm optimizer vocab_parallel)
  ddp_c_test(ref_ops_${area} SOURCES test_ref_${area}.c ../../fixtures/gradcheck.c LIBS ddpref LABELS cpu)
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/comm_mpi.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/p2p.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/comm_groups.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/fused.cmake)
