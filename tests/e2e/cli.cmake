# tests/e2e/cli.cmake: the command-line conventions and refusals of ddpc and ddprun (issues 11 and 14).
ddp_sh_test(test_cli SCRIPT test_cli.sh LABELS cpu)
set_tests_properties(test_cli PROPERTIES TIMEOUT 300)
ddp_sh_test(test_device_memory SCRIPT test_device_memory.sh LABELS cpu)
