# tests/e2e/plot.cmake: ddpc plot split|throughput and the per-rank metrics they read (issue 12).
ddp_sh_test(test_plot SCRIPT test_plot.sh LABELS cpu)
