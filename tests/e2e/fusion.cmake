# tests/e2e/fusion.cmake: fused kernels (the schedule's `fusion` field): fused and unfused plans give
# byte-identical training on the reference executor (one rank, DDP, a pipeline); bad values refused.
ddp_sh_test(test_fusion SCRIPT test_fusion.sh LABELS cpu)
# every kernel template begins with the programmatic-dependent-launch wait (templates/common.cuh)
ddp_sh_test(test_grid_dependency SCRIPT test_grid_dependency.sh LABELS cpu)
