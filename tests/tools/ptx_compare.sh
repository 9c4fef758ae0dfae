#!/usr/bin/env bash
# tests/tools/ptx_compare.sh BASE_TREE: proves a template refactor leaves the generated code alone. Dumps
# every distinct specialisation of tests/kernel_cases.c (build/tests/test_templates_compile with
# DDP_DUMP_SPECS), compiles each to PTX with NVRTC against BASE_TREE's templates and against this tree's,
# and compares: identical, or identical after renumbering virtual registers (%r12 -> %r), or different.
# A template the base tree lacks (attention_mma / attention_f32 after the split) maps to attention.cu.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=$(cd "$1" && pwd) NEW=$PWD W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cc -O1 -o "$W/nvrtc_ptx" tests/tools/nvrtc_ptx.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lnvrtc \
   -Wl,-rpath,/usr/local/cuda/lib64
mkdir -p "$W/spec" "$W/base" "$W/new"
DDP_DUMP_SPECS="$W/spec" build/tests/test_templates_compile >/dev/null
one() {
  local f=$1 t
  t=$(sed -n 's/^#include "\(.*\)\.cu"$/\1/p' "$W/spec/$f")
  if [ -f "$BASE/templates/$t.cu" ]; then cp "$W/spec/$f" "$W/base/$f"; else
    sed "s/^#include \"$t.cu\"$/#include \"attention.cu\"/" "$W/spec/$f" > "$W/base/$f"; fi
  "$W/nvrtc_ptx" "$W/base/$f" "$W/base/$f.ptx" -I"$BASE/templates" -I"$BASE/plan"
  "$W/nvrtc_ptx" "$W/spec/$f" "$W/new/$f.ptx" -I"$NEW/templates" -I"$NEW/plan"
}
export -f one; export W BASE NEW
ls "$W/spec" | xargs -P "$(nproc)" -I{} bash -c 'one {}'
same=0 renum=0 diff=0
norm() { sed -E 's/%(r|rd|f|fd|p|rs|h)[0-9]+/%\1/g' "$1"; }
for f in $(ls "$W/spec"); do
  if cmp -s "$W/base/$f.ptx" "$W/new/$f.ptx"; then same=$((same + 1))
  elif cmp -s <(norm "$W/base/$f.ptx") <(norm "$W/new/$f.ptx"); then renum=$((renum + 1)); echo "registers renumbered: $f"
  else diff=$((diff + 1)); echo "DIFFERENT: $f"; fi
done
echo "$(ls "$W/spec" | wc -l) specialisations: $same identical PTX, $renum identical up to register numbering, $diff different"
[ "$diff" -eq 0 ]
