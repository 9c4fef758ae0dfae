#!/usr/bin/env bash
# tests/e2e/test_install.sh: `cmake --install` puts ddpc and ddprun in <prefix>/bin and the templates,
# op_slots.h and the schedules (helper modules in lib/) in <prefix>/share/ddpc; the installed ddpc, run
# from another folder with DDP_TEMPLATE_DIR unset and a cold kernel cache, compiles the installed
# schedules/tiny.lua (and a schedule of our own that requires the library's models) and the installed
# ddprun runs it for 2 steps on the reference executor. Where unprivileged mount namespaces work
# (`unshare -rm`), this happens with the source and build trees hidden under empty tmpfs mounts; in any
# case the installed templates are shown to be the ones read, by breaking one and watching ddpc fail.
. "$(dirname "$0")/lib.sh"
: "${CMAKE:?CMAKE names the cmake binary}" "${DDP_BUILD_DIR:?DDP_BUILD_DIR names the build tree}"
src=$(cd "$DDP_SOURCE_DIR" && pwd -P)
bld=$(cd "$DDP_BUILD_DIR" && pwd -P)
# Outside the source and build trees, so hiding them leaves this visible.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ddpc-install-test.XXXXXX") || die "mktemp"
scratch=$(cd "$scratch" && pwd -P)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix work=$scratch/work
mkdir -p "$work"

"$CMAKE" --install "$bld" --prefix "$prefix" >"$scratch/install.log" 2>&1 ||
  die "cmake --install failed: $(tail -3 "$scratch/install.log")"
for f in bin/ddpc bin/ddprun share/ddpc/templates/common.cuh share/ddpc/templates/attention_mma.cu \
    share/ddpc/schedules/tiny.lua share/ddpc/schedules/lib/models.lua share/ddpc/schedules/lib/xl_ddp.lua; do
  [ -f "$prefix/$f" ] || fail "cmake --install did not install $f"
done
for f in "$src"/templates/*; do
  cmp -s "$f" "$prefix/share/ddpc/templates/$(basename "$f")" || fail "installed templates/$(basename "$f") differs"
done
if [ -f "$src/plan/op_slots.h" ]; then # the templates include it; NVRTC looks in templates/ and ../plan
  for d in templates plan; do
    cmp -s "$src/plan/op_slots.h" "$prefix/share/ddpc/$d/op_slots.h" || fail "op_slots.h not installed in share/ddpc/$d"
  done
fi
[ "$fail" = 0 ] || exit 1
cat >"$work/mine.lua" <<'LUA'
local models = require "models"   -- from the installed library (share/ddpc/schedules/lib)
return schedule { model = models.toy(), data = { global_batch = 4, rows = 4, seed = 0 }, precision = "fp32",
                  optimizer = sgd { lr = 0.1 }, steps = 2, seed = 1 }
LUA

# run_installed CMD...: CMD in $work with no DDP_TEMPLATE_DIR/DDP_SOURCE_DIR, a kernel cache of its own,
# and (where possible) the source and build trees hidden.
hide=0
case "$scratch/" in "$src/"* | "$bld/"*) ;; *) unshare -rm true 2>/dev/null && hide=1 ;; esac
run_installed() {
  local cmd=("$@")
  if [ $hide = 1 ]; then
    # the build tree first: it may lie inside the source tree
    unshare -rm bash -c 'mount -t tmpfs none "$2" && mount -t tmpfs none "$1" && [ ! -e "$1/templates" ] &&
      shift 2 && exec "$@"' - "$src" "$bld" "${cmd[@]}"
  else
    "${cmd[@]}"
  fi
}
export -n DDP_TEMPLATE_DIR DDP_SOURCE_DIR 2>/dev/null
unset DDP_TEMPLATE_DIR DDP_SOURCE_DIR
export DDPC_CACHE_DIR=$scratch/cache
cd "$work" || die "cd $work"
if [ $hide = 1 ]; then echo "source and build trees hidden (unshare -rm)"
else echo "note: unshare -rm is not available here; the source tree stays visible"; fi

run_installed "$prefix/bin/ddpc" "$prefix/share/ddpc/schedules/tiny.lua" -o tiny.bin >ddpc.out 2>&1 ||
  die "installed ddpc cannot compile the installed tiny.lua: $(cat ddpc.out)"
run_installed "$prefix/bin/ddprun" tiny.bin --device ref --steps 2 --metrics m.jsonl --quiet >run.out 2>&1 ||
  die "installed ddprun cannot run tiny.bin: $(cat run.out)"
steps=$(grep -c '"step"' m.jsonl)
[ "$steps" = 2 ] || fail "ddprun wrote $steps step lines, expected 2"
run_installed "$prefix/bin/ddpc" mine.lua -o mine.bin >mine.out 2>&1 ||
  fail "a schedule outside the tree cannot require the installed models: $(cat mine.out)"
echo "ok: installed ddpc compiled tiny.lua ($(stat -c %s tiny.bin) bytes) and ddprun ran $steps steps"

# The installed templates are the ones read: a broken copy, a cold cache, and ddpc must fail naming it.
echo '#error broken-installed-copy' >>"$prefix/share/ddpc/templates/common.cuh"
export DDPC_CACHE_DIR=$scratch/cache2
if "$prefix/bin/ddpc" "$prefix/share/ddpc/schedules/tiny.lua" -o broken.bin >broken.out 2>&1; then
  fail "ddpc compiled with a broken installed common.cuh: it read templates from elsewhere"
else
  grep -q "broken-installed-copy" broken.out || fail "unexpected error with the broken copy: $(cat broken.out)"
  [ ! -e broken.bin ] || fail "a failed compile left broken.bin"
fi
exit $fail
