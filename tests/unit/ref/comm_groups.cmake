# tests/unit/ref/comm_groups.cmake: communicator groups (plan format 4's comm table) on hand-built 4-rank plans:
# the reference executor's per-comm rendezvous, the reader's and the verifier's checks (test_comm_groups.c).
ddp_c_test(test_comm_groups SOURCES test_comm_groups.c ../../fixtures/p2p_plan.c LIBS ddpruntime ddpcompiler
  LABELS cpu)
set_tests_properties(test_comm_groups PROPERTIES TIMEOUT 180)
