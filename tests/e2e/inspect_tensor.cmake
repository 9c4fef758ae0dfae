# tests/e2e/inspect_tensor.cmake: `ddpc inspect`'s tensor parallelism section and JSON object on compiled plans.
ddp_sh_test(test_inspect_tensor SCRIPT test_inspect_tensor.sh LABELS cpu)
