#!/usr/bin/env bash
# tests/bench/prepare_ab.sh NAME REV [NAME REV ...]: builds each git revision REV of this repository in a
# scratch worktree and compiles the XL benchmark plan (schedules/bench_xl.lua, or the path the revision
# has) with that revision's own ddpc and templates, into dev/ab/NAME/{ddprun,xl.bin}. Run after
# prepare_device.sh; tests/bench/device_ab.sh then times the revisions side by side in one GPU call, so
# a refactor is checked against the numbers of the code before it on the same GPU and in the same call.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
while [ $# -ge 2 ]; do
  name=$1 rev=$2; shift 2
  wt=/tmp/ddpc-ab-$name
  rm -rf "$wt"; git worktree prune
  git worktree add -q --detach "$wt" "$rev"
  (cd "$wt" && cmake --preset default >/dev/null && cmake --build build -j"$(nproc)" --target ddpc ddprun >/dev/null)
  mkdir -p dev/ab/$name
  cp "$wt/build/ddprun" dev/ab/$name/ddprun
  sched=$wt/schedules/bench_xl.lua
  (cd "$wt" && DDPC_CACHE_DIR=$root/dev/ab/cache-$name DDP_TEMPLATE_DIR=$wt/templates \
     build/ddpc "$sched" -o "$root/dev/ab/$name/xl.bin" -q)
  rm -rf "$root/dev/ab/cache-$name"
  git worktree remove --force "$wt"
  echo "dev/ab/$name: $(git rev-parse --short "$rev"), $(du -sh dev/ab/$name | cut -f1)"
done
