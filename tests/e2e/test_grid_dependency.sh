#!/usr/bin/env bash
# tests/e2e/test_grid_dependency.sh: every kernel of templates/ begins with DDP_GRID_DEPENDENCY()
# (templates/common.cuh). The runtime may launch any kernel of a module exporting ddp_grid_dependency with
# programmatic stream serialisation (DDP_PDL=1), so one that read or wrote memory before that wait could
# race the kernel before it on its stream. Also checks that this test finds every kernel (the count of
# `__global__` in the sources) and that it catches one without the wait (a copy of a template with it
# removed).
. "$(dirname "$0")/lib.sh"
e2e_tmp grid_dependency

# check FILE...: prints "name: file:line" for each extern "C" __global__ kernel whose body does not begin
# with DDP_GRID_DEPENDENCY();, and the number of kernels seen as "kernels N" last
check() {
  awk '
    /extern "C" __global__/ { want = 1; name = ""; line = FNR; file = FILENAME }
    want && match($0, /ddp_[a-z0-9_]+\(/) && name == "" { name = substr($0, RSTART, RLENGTH - 1) }
    want && /\{[ \t]*$/ { want = 0; first = 1; next }
    first && NF { if ($0 !~ /^[ \t]*DDP_GRID_DEPENDENCY\(\);[ \t]*$/) printf "%s: %s:%d\n", name, file, line; first = 0; n++ }
    END { printf "kernels %d\n", n }
  ' "$@"
}

src=("$DDP_SOURCE_DIR"/templates/*.cu "$DDP_SOURCE_DIR"/templates/*.cuh)
out=$(check "${src[@]}")
kernels=$(echo "$out" | sed -n 's/^kernels //p')
globals=$(cat "${src[@]}" | grep -c '__global__')
missing=$(echo "$out" | grep -v '^kernels ')
[ -n "$missing" ] && fail "kernels without DDP_GRID_DEPENDENCY() first: $missing"
[ "$kernels" = "$globals" ] || fail "found $kernels kernels, but the sources have $globals __global__"
[ "$kernels" -ge 40 ] || fail "found only $kernels kernels"
[ -n "$missing" ] || [ "$kernels" != "$globals" ] || echo "ok: all $kernels kernels begin with DDP_GRID_DEPENDENCY()"

# the check itself: a template with the wait removed from one kernel is caught, by name
sed '0,/DDP_GRID_DEPENDENCY();/{/DDP_GRID_DEPENDENCY();/d}' "$DDP_SOURCE_DIR/templates/rope.cu" >"$tmp/rope.cu"
caught=$(check "$tmp/rope.cu" | grep -v '^kernels ')
case $caught in
  ddp_rope:*) echo "ok: a kernel without it is reported ($caught)" ;;
  *) fail "a rope.cu without the wait was not reported (got '$caught')" ;;
esac
grep -q 'extern "C" __device__ const int ddp_grid_dependency' "$DDP_SOURCE_DIR/templates/common.cuh" ||
  fail "templates/common.cuh does not export ddp_grid_dependency"
exit $fail
