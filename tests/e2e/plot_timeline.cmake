# tests/e2e/plot_timeline.cmake: ddpc plot timeline, the traces it reads, and throughput series by parallel kind (issue 13).
ddp_sh_test(test_plot_timeline SCRIPT test_plot_timeline.sh LABELS cpu)
ddp_sh_test(test_plot_series SCRIPT test_plot_series.sh LABELS cpu)
