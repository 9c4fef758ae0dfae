#!/usr/bin/env bash
# tests/e2e/test_sandbox_limits.sh: the sandbox's limits that Lua's instruction hook alone did not enforce
# (issue 11). A __gc finalizer and an xpcall message handler run with hooks off, and string.find's matcher
# is a C loop: each schedule below used to make ddpc run forever. Now each ends within the time limit with
# one line naming the schedule and exit status 1, and leaves no plan: by a refusal at file:line, or by the
# watchdog (--time-limit, CPU seconds) for a loop the hook cannot reach.
set -u
tmp="$DDP_TEST_TMP/sandbox_limits"; rm -rf "$tmp"; mkdir -p "$tmp"
bad=tests/fixtures/schedules_bad
cd "$DDP_SOURCE_DIR" || exit 1
fail=0
# expect NAME LIMIT WANT: ddpc on $bad/NAME.lua with --time-limit LIMIT must fail within 20 s with one
# line that is exactly WANT (WANT_RE, an extended regular expression, when set instead).
expect() {
  local name=$1 limit=$2 want=$3
  timeout "${DDP_LIMIT_TIMEOUT:-20}" "$DDPC" "$bad/$name.lua" -o "$tmp/p.bin" --time-limit "$limit" >"$tmp/out" 2>"$tmp/err"
  local rc=$? got; got=$(cat "$tmp/err")
  if [ $rc = 124 ]; then echo "FAIL: $name: still running after ${DDP_LIMIT_TIMEOUT:-20} s"; fail=1; return; fi
  if [ $rc != 1 ]; then echo "FAIL: $name: exit status $rc (want 1): $got"; fail=1; return; fi
  local same; if [ -n "${WANT_RE:-}" ]; then grep -qxE -- "$WANT_RE" "$tmp/err" && same=1; else [ "$got" = "$want" ] && same=1; fi
  if [ "$(wc -l <"$tmp/err")" != 1 ] || [ -z "${same:-}" ]; then
    printf 'FAIL: %s:\n  got  %s\n  want %s\n' "$name" "$got" "$want"; fail=1; return
  fi
  if [ -e "$tmp/p.bin" ]; then echo "FAIL: $name: left a plan"; fail=1; return; fi
  echo "ok: $name: $got"
}
expect gc_loop 5 "$bad/gc_loop.lua:4: setmetatable: __gc finalizers are not allowed in schedules"
expect xpcall_loop 5 "$bad/xpcall_loop.lua:4: the schedule ran more than 100000000 Lua instructions, 16 bytes it allocates counting as one (an infinite loop?)"
expect pattern 5 "$bad/pattern.lua:4: string.find: the pattern \"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*...\" could backtrack more than 1e+09 steps on 30000 bytes, the sandbox's limit (use fewer *, +, - or ? items, or a shorter string)"
# The watchdog: the CPU limit, or on a crowded machine the wall-clock limit (3 x) first.
watchdog=": the schedule ran longer than (0\.5 s of CPU time|1\.5 s of wall-clock time) \(ddpc --time-limit 0\.5\): an endless loop, or a pattern or string operation too slow for a schedule\?"
WANT_RE="$bad/slow_pattern\.lua$watchdog" expect slow_pattern 0.5 "$bad/slow_pattern.lua: ... longer than ..."
WANT_RE="$bad/slow_concat\.lua$watchdog" expect slow_concat 0.5 "$bad/slow_concat.lua: ... longer than ..."

# --time-limit is checked (test_schedules_compile compiles every shipped schedule under the default).
if "$DDPC" schedules/toy.lua -o "$tmp/p.bin" --time-limit 0 2>"$tmp/err" ||
   ! grep -q "^ddpc: --time-limit: '0' is not a number in (0, 1000000\]$" "$tmp/err"; then
  echo "FAIL: --time-limit 0: $(cat "$tmp/err")"; fail=1
fi
exit $fail
