# tests/e2e/ckpt.cmake: crash-consistent checkpoints, graceful SIGTERM and the global loss (issues 11, 14).
ddp_sh_test(test_ckpt_kill SCRIPT test_ckpt_kill.sh LABELS cpu)
set_tests_properties(test_ckpt_kill PROPERTIES TIMEOUT 150)
ddp_sh_test(test_sigterm SCRIPT test_sigterm.sh LABELS cpu)
ddp_sh_test(test_global_loss SCRIPT test_global_loss.sh LABELS cpu)
set_tests_properties(test_sigterm PROPERTIES TIMEOUT 120)
ddp_sh_test(test_ckpt_layout SCRIPT test_ckpt_layout.sh LABELS cpu)
include(${CMAKE_CURRENT_LIST_DIR}/ckpt_sharded.cmake)
