# tests/e2e/plot_timeline.cmake: ddpc plot timeline and the traces it reads (issue 13).
ddp_sh_test(test_plot_timeline SCRIPT test_plot_timeline.sh LABELS cpu)
