# tests/unit/driver/driver.cmake: the shared driver (runtime/driver/run.c: reads, energy metrics, the next step
# issued before a step's host sum) and INIT_TENSOR's host fill (init_fill.c).
ddp_c_test(test_run_read SOURCES test_run_read.c fake_exec.c LIBS ddpruntime LABELS cpu)
ddp_c_test(test_run_energy SOURCES test_run_energy.c fake_exec.c LIBS ddpruntime LABELS cpu)
ddp_c_test(test_run_pipeline SOURCES test_run_pipeline.c fake_exec.c LIBS ddpruntime LABELS cpu)
ddp_c_test(test_run_stop SOURCES test_run_stop.c fake_exec.c LIBS ddpruntime LABELS cpu)
ddp_c_test(test_init_fill SOURCES test_init_fill.c LIBS ddpruntime LABELS cpu)
include(${CMAKE_CURRENT_LIST_DIR}/step_times_pipe.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/calibrate.cmake)
