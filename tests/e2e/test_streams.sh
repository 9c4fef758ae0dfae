#!/usr/bin/env bash
# tests/e2e/test_streams.sh (cpu): the schedule's `streams` field (compiler/frontend/streams.c):
#  - update_priority = "low" (the default for single() and bucketed DDP with optimizer_overlap, "equal"
#    elsewhere) marks the streams that carry only
#    updates in the plan's meta low_priority_streams, as `ddpc inspect` prints it: one rank's side stream
#    with the optimizer overlapped (stream 1), ZeRO-2's and bucketed DDP's update stream with
#    optimizer_overlap (stream 2); none where no stream carries only updates (bucketed DDP without it, a
#    single rank with clipping, so no overlap);
#    "equal": none; ZeRO without the field: none;
#  - update_tail (single() and bucketed DDP with optimizer_overlap; default 0.25 for single()) puts the last
#    update groups (DDP: buckets) on a second side stream that keeps the high priority;
#  - --set creates the table when the schedule has none; the plans run on the reference executor with the
#    same losses whatever the priorities;
#  - the overlapped optimizer's weights and state are the serial optimizer's, bit for bit;
#  - bad values are refused in one line naming the field, with a non-zero exit and no plan written.
# The GPU side (the streams created at those priorities, results bitwise the equal-priority run's, also as
# CUDA graphs on 2 GPUs) is in tests/e2e/gpu_step.sh and gpu_ddp.sh.
. "$(dirname "$0")/lib.sh"
e2e_tmp streams
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"
# sched NAME PARALLEL CLIP STREAMS_VALUE: $tmp/NAME.lua, the tiny model with that parallel layout
sched() {
  local field=""
  [ -n "$4" ] && field="streams = $4,"
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = models.tiny({ d_model = 64, d_ff = 128, heads = 4, vocab = 256, context = 32 }),
                  data = { global_batch = 8, tokens = "random", seed = 1 }, precision = "fp32",
                  optimizer = adamw { lr = 3e-3 $3 }, parallel = $2, $field steps = 3, seed = 1 }
LUA
}
low_of() { "$DDPC" inspect "$tmp/$1.bin" | awk '$1 == "low_priority_streams" { $1 = ""; sub(/^ +/, ""); print; exit }'; }
zero2='ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.05, overlap = "backward", shard = "zero2", optimizer_overlap = true }'
ddp='ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.05, overlap = "backward" }'
ddp_ov='ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.05, overlap = "backward", optimizer_overlap = true }'
sched single_low "single()" "" '{ update_priority = "low" }'
sched single_equal "single()" "" '{ update_priority = "equal" }'
sched single_none "single()" "" ''
sched single_clip "single()" ", clip = 1.0" '{ update_priority = "low" }'
sched zero2_low "$zero2" "" '{ update_priority = "low" }'
sched zero2_none "$zero2" "" ''
sched ddp_low "$ddp" "" '{ update_priority = "low" }'
sched ddp_ov_low "$ddp_ov" "" '{ update_priority = "low" }'
sched ddp_ov_none "$ddp_ov" "" ''
for n in single_low single_equal single_none single_clip zero2_low zero2_none ddp_low ddp_ov_low ddp_ov_none; do
  "$DDPC" "$tmp/$n.lua" -o "$tmp/$n.bin" -q || fail "$n does not compile"
done
for kv in "single_low 2 (streams 1)" "single_equal 0 (none)" "single_none 2 (streams 1)" "single_clip 0 (none)" \
          "zero2_low 4 (streams 2)" "zero2_none 0 (none)" "ddp_low 0 (none)" "ddp_ov_low 4 (streams 2)" \
          "ddp_ov_none 4 (streams 2)"; do
  set -- $kv
  n=$1; shift
  got=$(low_of "$n")
  [ "$got" = "$*" ] && echo "ok: $n: low_priority_streams $got" || fail "$n: low_priority_streams is '$got', expected '$*'"
done
# the program listing marks the low stream
"$DDPC" inspect "$tmp/single_low.bin" | grep -q "^-- stream 1 (comm, low priority): " &&
  ! "$DDPC" inspect "$tmp/single_equal.bin" | grep -q "low priority" && echo "ok: inspect's listing marks stream 1 low" ||
  fail "inspect's listing: $("$DDPC" inspect "$tmp/single_low.bin" | grep "^-- stream")"
# update_tail: the last groups' updates on a second side stream that stays high (3 streams, stream 2 not low);
# a wider model has several update groups (8M elements each), so both side streams carry updates
"$DDPC" "$tmp/single_none.lua" -o "$tmp/tail.bin" -q --set streams.update_priority=low --set streams.update_tail=0.5 \
  --set model.d_model=1024 --set model.d_ff=4096 --set model.heads=16 || fail "update_tail refused"
nst=$("$DDPC" inspect "$tmp/tail.bin" | awk '$1 == "streams" { print $2; exit }')
[ "$(low_of tail)" = "2 (streams 1)" ] && [ "$nst" = 3 ] && echo "ok: update_tail 0.5: 3 streams, low_priority_streams 2 (streams 1)" ||
  fail "update_tail 0.5: $nst streams, low_priority_streams $(low_of tail)"
"$DDPC" "$tmp/single_none.lua" -o "$tmp/tail_tiny.bin" -q --set streams.update_priority=low --set streams.update_tail=0.5 ||
  fail "update_tail on the tiny model refused"
"$DDPRUN" "$tmp/tail_tiny.bin" --device ref >"$tmp/tail.out" 2>&1 || fail "tail does not run on the reference executor"
c=$(awk '$1 == "step" { print $2, $4 }' "$tmp/tail.out"); d=$(awk '$1 == "step" { print $2, $4 }' "$tmp/none.out" 2>/dev/null)
"$DDPC" "$tmp/single_none.lua" -o "$tmp/set.bin" -q --set streams.update_priority=equal || fail "--set streams.update_priority refused"
[ "$(low_of set)" = "0 (none)" ] && echo "ok: --set streams.update_priority=equal" || fail "--set: $(low_of set)"
# the reference executor runs the streams in program order: the same losses with and without the field
"$DDPRUN" "$tmp/single_low.bin" --device ref >"$tmp/low.out" 2>&1 || fail "single_low does not run on the reference executor"
"$DDPRUN" "$tmp/single_equal.bin" --device ref >"$tmp/none.out" 2>&1 || fail "single_equal does not run on the reference executor"
a=$(awk '$1 == "step" { print $2, $4 }' "$tmp/low.out"); b=$(awk '$1 == "step" { print $2, $4 }' "$tmp/none.out")
[ -n "$a" ] && [ "$a" = "$b" ] && echo "ok: the reference executor's losses equal without the field ($(echo "$a" | wc -l) steps)" ||
  fail "losses differ: '$a' against '$b'"
[ -n "$c" ] && [ "$c" = "$b" ] && echo "ok: update_tail's losses equal without the field" || fail "update_tail losses differ: '$c' against '$b'"
# the optimizer overlapped with the backward gives the serial optimizer's weights and state bit for bit on the
# reference executor (optimizer_overlap = false: the update after the backward)
"$DDPC" "$tmp/single_none.lua" -o "$tmp/serial.bin" -q --set parallel.optimizer_overlap=false || fail "optimizer_overlap=false refused"
for n in single_low serial; do
  "$DDPRUN" "$tmp/$n.bin" --device ref --quiet --checkpoint-dir "$tmp/$n.ckpt" || fail "$n does not run on the reference executor"
done
same single_low serial 0 0
files single_low serial optimizer 0 0
for n in zero2_low ddp_ov_low; do
  "$DDPRUN" "$tmp/$n.bin" --device ref --nproc 2 --quiet && echo "ok: $n runs on 2 reference ranks" ||
    fail "$n does not run on the reference executor"
done

# bad NAME VALUE PATTERN: the schedule with that value is refused in one line matching PATTERN
bad() {
  sched "$1" "single()" "" "$2"
  refused "$1" "$3"
}
bad value '{ update_priority = "high" }' 'streams.update_priority must be "equal" or "low", got "high"'
bad type '{ update_priority = 1 }' 'streams.update_priority must be'
bad not_table '"low"' 'streams must be a table such as \{ update_priority = "low" \}'
bad unknown '{ update_prio = "low" }' 'streams.update_prio is not a field of streams'
bad tail_equal '{ update_priority = "equal", update_tail = 0.25 }' 'streams.update_tail needs update_priority = "low"'
sched tail_ddp "$ddp" "" '{ update_priority = "low", update_tail = 0.25 }'
refused tail_ddp 'streams.update_tail applies to single\(\) and to bucketed ddp\{\} with optimizer_overlap only \(their overlapped optimizers\), got 0.25$'
# ... bucketed DDP with optimizer_overlap takes it: the last bucket's update on stream 3 (high), the rest on
# the low stream 2; the same losses as without the tail on 2 reference ranks
sched tail_ddp_ov "$ddp_ov" "" '{ update_priority = "low", update_tail = 0.25 }'
"$DDPC" "$tmp/tail_ddp_ov.lua" -o "$tmp/tail_ddp_ov.bin" -q || fail "update_tail with ddp{ optimizer_overlap } refused"
nst=$("$DDPC" inspect "$tmp/tail_ddp_ov.bin" | awk '$1 == "streams" { print $2; exit }')
tail3=$("$DDPC" inspect --rank 0 "$tmp/tail_ddp_ov.bin" | grep -cE "^ *[0-9]+ +3 +kernel +ADAMW")
[ "$(low_of tail_ddp_ov)" = "4 (streams 2)" ] && [ "$nst" = 4 ] && [ "$tail3" -ge 1 ] &&
  echo "ok: ddp{ optimizer_overlap } with update_tail 0.25: 4 streams, stream 2 low, $tail3 update(s) on stream 3" ||
  fail "ddp update_tail: $nst streams, low_priority_streams $(low_of tail_ddp_ov), $tail3 updates on stream 3"
for n in ddp_ov_low tail_ddp_ov; do
  "$DDPRUN" "$tmp/$n.bin" --device ref --nproc 2 >"$tmp/$n.out" 2>&1 || fail "$n does not run on the reference executor"
done
a=$(awk '$1 == "step" { print $2, $4 }' "$tmp/ddp_ov_low.out"); b=$(awk '$1 == "step" { print $2, $4 }' "$tmp/tail_ddp_ov.out")
[ -n "$a" ] && [ "$a" = "$b" ] && echo "ok: ddp update_tail's losses equal without the tail ($(echo "$a" | wc -l) lines)" ||
  fail "ddp update_tail losses differ: '$b' against '$a'"
bad tail_one '{ update_priority = "low", update_tail = 1 }' 'streams.update_tail must be a number in \[0, 1\), got 1$'
bad tail_type '{ update_priority = "low", update_tail = "half" }' 'streams.update_tail must be a number in \[0, 1\)'
if "$DDPC" "$tmp/single_none.lua" -o "$tmp/set2.bin" -q --set streams.update_priority=lowest 2>"$tmp/err"; then fail "--set lowest compiled"
elif [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q '^--set streams.update_priority=lowest: streams.update_priority must be "equal" or "low", got "lowest"$' "$tmp/err"; then
  echo "ok: $(cat "$tmp/err")"
else fail "--set streams.update_priority=lowest: $(cat "$tmp/err")"; fi
exit $fail
