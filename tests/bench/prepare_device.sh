#!/usr/bin/env bash
# tests/bench/prepare_device.sh: builds what a GPU machine run needs into dev/ (git-ignored, carried to
# the device): the binaries and the kernel cache filled by compiling every benchmark plan here (ddpc needs
# no GPU); the device scripts recompile the plans from that warm cache in well under a second each.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build -j"$(nproc)" >/dev/null
rm -rf dev; mkdir -p dev/bin dev/plans dev/cache
cp build/ddpc build/ddprun build/tests/gpu_kernels build/tests/ddpbench_kernels build/tests/st_compare \
   build/tests/test_cuda_exec_gpu dev/bin/
export DDPC_CACHE_DIR=$PWD/dev/cache
DDPC=build/ddpc PLANS=dev/plans
. tests/bench/plans.sh
plans_single
plans_ddp
plans_sharding
plans_pipeline
. tests/bench/attn_variants.sh
attn_variants_compile dev/plans
. tests/bench/adamw_variants.sh
adamw_variants_compile dev/plans
rm -rf dev/plans
du -sh dev
