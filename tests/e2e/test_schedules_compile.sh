#!/usr/bin/env bash
# tests/e2e/test_schedules_compile.sh: every shipped schedule compiles (kernels included: NVRTC needs no GPU)
# and `ddpc inspect` prints every section of its plan; inspect of a missing rank is refused.
. "$(dirname "$0")/lib.sh"
e2e_tmp schedules
headings=("== summary ==" "== tensors ==" "== memory ==" "== buckets ==" "== program rank 0 init ==" "== program rank 0 step ==" "== kernels ==")
for s in "$DDP_SOURCE_DIR"/schedules/*.lua; do   # helper modules are in schedules/lib/ (test_schedule_lib.sh)
  name=$(basename "$s" .lua)
  if ! "$DDPC" "$s" -o "$tmp/$name.bin" 2>"$tmp/$name.err"; then
    fail "$name does not compile: $(cat "$tmp/$name.err")"; continue
  fi
  "$DDPC" inspect "$tmp/$name.bin" >"$tmp/$name.txt" 2>&1 || { fail "inspect $name"; continue; }
  for h in "${headings[@]}"; do
    grep -qF -- "$h" "$tmp/$name.txt" || fail "inspect $name lacks '$h'"
  done
  grep -q "KERNEL\|kernel" "$tmp/$name.txt" || fail "$name lists no kernels"
  echo "ok: $name ($(stat -c %s "$tmp/$name.bin") bytes)"
done
if "$DDPC" inspect "$tmp/toy.bin" --rank 5 >/dev/null 2>"$tmp/rank.err"; then
  fail "inspect --rank 5 of a 1-rank plan succeeded"
else
  grep -q "rank" "$tmp/rank.err" || fail "unclear message: $(cat "$tmp/rank.err")"
fi
exit $fail
