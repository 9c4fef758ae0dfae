# tests/unit/driver/calibrate.cmake: the fits of `ddprun --calibrate` (runtime/bench/calib_fit.c) on
# synthetic samples with known figures.
ddp_c_test(test_calib_fit SOURCES test_calib_fit.c LIBS ddpruntime LABELS cpu)
