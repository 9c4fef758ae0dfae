# tests/unit/driver/step_times_pipe.cmake: a pipeline stage's forward/backward from its microbatch timing points (issue 13).
ddp_c_test(test_step_times_pipe SOURCES test_step_times_pipe.c LIBS ddpruntime LABELS cpu)
