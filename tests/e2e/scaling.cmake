# tests/e2e/scaling.cmake: compile and inspect time against model depth (a guard against quadratic steps).
ddp_sh_test(test_scaling SCRIPT test_scaling.sh LABELS cpu)
set_tests_properties(test_scaling PROPERTIES TIMEOUT 1200)
# ddpc scaling fit / plan: the IsoFLOPs fits, plots and schedules (issue 16).
ddp_sh_test(test_scaling_cli SCRIPT test_scaling_cli.sh LABELS cpu)
