#!/usr/bin/env bash
# tests/e2e/test_schedules_compile.sh: every shipped schedule compiles (kernels included: NVRTC needs no GPU)
# and `ddpc inspect` prints every section of its plan; inspect of a missing rank is refused.
set -u
tmp="$DDP_TEST_TMP/schedules"; mkdir -p "$tmp"
fail=0
headings=("== summary ==" "== tensors ==" "== memory ==" "== buckets ==" "== program rank 0 init ==" "== program rank 0 step ==" "== kernels ==")
for s in "$DDP_SOURCE_DIR"/schedules/*.lua; do
  grep -q "^return schedule" "$s" || continue   # helper modules (models.lua, xl_ddp.lua)
  name=$(basename "$s" .lua)
  if ! "$DDPC" "$s" -o "$tmp/$name.bin" 2>"$tmp/$name.err"; then
    echo "FAIL: $name does not compile: $(cat "$tmp/$name.err")"; fail=1; continue
  fi
  "$DDPC" inspect "$tmp/$name.bin" >"$tmp/$name.txt" 2>&1 || { echo "FAIL: inspect $name"; fail=1; continue; }
  for h in "${headings[@]}"; do
    grep -qF -- "$h" "$tmp/$name.txt" || { echo "FAIL: inspect $name lacks '$h'"; fail=1; }
  done
  grep -q "KERNEL\|kernel" "$tmp/$name.txt" || { echo "FAIL: $name lists no kernels"; fail=1; }
  echo "ok: $name ($(stat -c %s "$tmp/$name.bin") bytes)"
done
if "$DDPC" inspect "$tmp/toy.bin" --rank 5 >/dev/null 2>"$tmp/rank.err"; then
  echo "FAIL: inspect --rank 5 of a 1-rank plan succeeded"; fail=1
else
  grep -q "rank" "$tmp/rank.err" || { echo "FAIL: unclear message: $(cat "$tmp/rank.err")"; fail=1; }
fi
exit $fail
