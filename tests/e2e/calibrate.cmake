# tests/e2e/calibrate.cmake: `ddprun --calibrate` on the reference executor, its profile read back by
# `ddpc explain --profile`, and its bad inputs (test_calibrate.sh).
ddp_sh_test(test_calibrate SCRIPT test_calibrate.sh LABELS cpu)
