# tests/unit/explain/cost_model.cmake: read-modify-write bytes and the device shared by a rank's streams
# (plan/work.c, compiler/explain/cost.c, sim.c) on hand-made plans.
ddp_c_test(test_cost_model SOURCES test_cost_model.c LIBS ddpcompiler LABELS cpu)
# the power model: a rank's joules and the power floor, and the profile's "power" field (energy.c, profile.c)
ddp_c_test(test_energy SOURCES test_energy.c LIBS ddpcompiler LABELS cpu)
