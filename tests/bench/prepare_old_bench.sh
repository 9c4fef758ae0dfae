#!/usr/bin/env bash
# tests/bench/prepare_old_bench.sh REV: builds ddpbench_kernels of git revision REV of this repository in a
# scratch worktree into dev/old/ with that revision's templates/ and plan/ headers (the kernels compile from
# them at run time: DDP_TEMPLATE_DIR=dev/old/templates), so a device script can time the kernels of the
# code before a change beside the new ones in the same call. Run after prepare_device.sh (which empties dev/).
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=${1:?usage: prepare_old_bench.sh REV}
wt=/tmp/ddpc-old-bench
rm -rf "$wt"; git worktree prune
git worktree add -q --detach "$wt" "$rev"
(cd "$wt" && cmake --preset default >/dev/null && cmake --build build -j"$(nproc)" --target ddpbench_kernels >/dev/null)
rm -rf dev/old; mkdir -p dev/old/plan
cp "$wt/build/tests/ddpbench_kernels" dev/old/
cp -r "$wt/templates" dev/old/templates
cp "$wt"/plan/*.h dev/old/plan/
git worktree remove --force "$wt"
echo "dev/old: $(git rev-parse --short "$rev"), $(du -sh dev/old | cut -f1)"
