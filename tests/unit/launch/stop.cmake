# tests/unit/launch/stop.cmake: SIGTERM to `--nproc` reaches every rank as a graceful stop (test_launch_stop).
ddp_c_test(test_launch_stop SOURCES test_launch_stop.c LIBS ddpruntime LABELS cpu)
set_tests_properties(test_launch_stop PROPERTIES TIMEOUT 60)
