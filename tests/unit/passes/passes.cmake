# tests/unit/passes/passes.cmake: the plan verifier on compiled plans and on broken ones.
ddp_c_test(test_verifier SOURCES test_verifier.c LIBS ddpcompiler ddpruntime LABELS cpu)
include(${CMAKE_CURRENT_LIST_DIR}/linear_structures.cmake)
# the ZeRO levels' plans: residency, prefetch, the verifier on broken copies
ddp_c_test(test_zero_plans SOURCES test_zero_plans.c LIBS ddpcompiler ddpruntime LABELS cpu)
# pipelines: plans of every schedule verify and pass the reader; broken copies refused
ddp_c_test(test_pipeline_plans SOURCES test_pipeline_plans.c LIBS ddpcompiler ddpruntime LABELS cpu)
# the pairing of pipeline messages as the copy-engine path's flag slots (plan/p2p_slots.c)
ddp_c_test(test_p2p_slots SOURCES test_p2p_slots.c LIBS ddpcompiler LABELS cpu)
