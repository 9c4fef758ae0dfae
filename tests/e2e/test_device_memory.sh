#!/usr/bin/env bash
# tests/e2e/test_device_memory.sh: ddpc --device-memory. The 10b model with FSDP on one rank does not fit a
# 141 GB GPU: refused at compile time in one line with the planner's bytes per class, exit 1, no plan; on
# 2 ranks it fits (docs/PERFORMANCE.md; not compiled here: its kernels would take a cold cache minutes; the
# refusal comes before code generation). XL DDP in 30 GB gets the hint to shard. Bad sizes: exit 2.
. "$(dirname "$0")/lib.sh"
e2e_tmp device_memory
s="$DDP_SOURCE_DIR/schedules/fsdp_10b.lua"
"$DDPC" "$s" -o "$tmp/one.bin" --device-memory 141GB --set parallel.ranks=1 --set data.global_batch=4 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || fail "one rank: exit $rc, want 1"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "one rank: not one line: $(cat "$tmp/err")"
grep -q "fsdp_10b.lua: does not fit: rank 0 needs 199.4[0-9] GB (params 61.5[0-9], grads 41.0[0-9], optimizer 82.0[0-9]" "$tmp/err" ||
  fail "one rank: $(cat "$tmp/err")"
grep -q "the device has 141.00 GB (--device-memory); use more ranks" "$tmp/err" || fail "one rank: $(cat "$tmp/err")"
[ -e "$tmp/one.bin" ] && fail "a plan was written"
echo "ok: $(cat "$tmp/err")"
# a DDP plan is refused with the hint to shard
x="$DDP_SOURCE_DIR/schedules/bucketed_10mb.lua"
"$DDPC" "$x" -o "$tmp/xl.bin" --device-memory 30GB 2>"$tmp/err2"; rc=$?
[ $rc = 1 ] && grep -q "does not fit: rank 0 needs 43.0[0-9] GB .*the device has 30.00 GB (--device-memory); shard the parameters (fsdp{}) or use more ranks" "$tmp/err2" ||
  fail "XL DDP in 30 GB: exit $rc: $(cat "$tmp/err2")"
for bad in abc 0 -5GB 1.5XB "" 2e30; do
  "$DDPC" "$s" -o "$tmp/b.bin" --device-memory "$bad" 2>"$tmp/err3"; rc=$?
  [ $rc = 2 ] && grep -q "^ddpc: --device-memory: '$bad' is not a size such as 80GiB or 141GB" "$tmp/err3" ||
    fail "--device-memory '$bad': exit $rc: $(cat "$tmp/err3")"
done
exit $fail
