#!/usr/bin/env bash
# tests/e2e/test_streams.sh (cpu): the schedule's `streams` field (compiler/frontend/streams.c):
#  - { update_priority = "low" } marks the streams that carry only updates in the plan's meta
#    low_priority_streams, as `ddpc inspect` prints it: one rank's side stream with the optimizer overlapped
#    (stream 1), ZeRO-2's update stream with optimizer_overlap (stream 2); none where no stream carries only
#    updates (bucketed DDP, a single rank with clipping, so no overlap); "equal" and no field: none;
#  - --set creates the table when the schedule has none; the plan runs on the reference executor with the
#    same losses as without the field;
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
sched single_low "single()" "" '{ update_priority = "low" }'
sched single_equal "single()" "" '{ update_priority = "equal" }'
sched single_none "single()" "" ''
sched single_clip "single()" ", clip = 1.0" '{ update_priority = "low" }'
sched zero2_low "$zero2" "" '{ update_priority = "low" }'
sched ddp_low "$ddp" "" '{ update_priority = "low" }'
for n in single_low single_equal single_none single_clip zero2_low ddp_low; do
  "$DDPC" "$tmp/$n.lua" -o "$tmp/$n.bin" -q || fail "$n does not compile"
done
for kv in "single_low 2 (streams 1)" "single_equal 0 (none)" "single_none 0 (none)" "single_clip 0 (none)" \
          "zero2_low 4 (streams 2)" "ddp_low 0 (none)"; do
  set -- $kv
  n=$1; shift
  got=$(low_of "$n")
  [ "$got" = "$*" ] && echo "ok: $n: low_priority_streams $got" || fail "$n: low_priority_streams is '$got', expected '$*'"
done
"$DDPC" "$tmp/single_none.lua" -o "$tmp/set.bin" -q --set streams.update_priority=low || fail "--set streams.update_priority refused"
[ "$(low_of set)" = "2 (streams 1)" ] && echo "ok: --set streams.update_priority=low" || fail "--set: $(low_of set)"
# the reference executor runs the streams in program order: the same losses with and without the field
"$DDPRUN" "$tmp/single_low.bin" --device ref >"$tmp/low.out" 2>&1 || fail "single_low does not run on the reference executor"
"$DDPRUN" "$tmp/single_none.bin" --device ref >"$tmp/none.out" 2>&1 || fail "single_none does not run on the reference executor"
a=$(awk '$1 == "step" { print $2, $4 }' "$tmp/low.out"); b=$(awk '$1 == "step" { print $2, $4 }' "$tmp/none.out")
[ -n "$a" ] && [ "$a" = "$b" ] && echo "ok: the reference executor's losses equal without the field ($(echo "$a" | wc -l) steps)" ||
  fail "losses differ: '$a' against '$b'"
"$DDPRUN" "$tmp/zero2_low.bin" --device ref --nproc 2 --quiet && echo "ok: zero2_low runs on 2 reference ranks" ||
  fail "zero2_low does not run on the reference executor"

# bad NAME VALUE PATTERN
bad() {
  sched "$1" "single()" "" "$2"
  if "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q 2>"$tmp/err"; then fail "$1: compiled"; return; fi
  local lines; lines=$(wc -l <"$tmp/err")
  [ "$lines" = 1 ] || { fail "$1: $lines lines: $(cat "$tmp/err")"; return; }
  grep -qE -- "$3" "$tmp/err" || { fail "$1: '$(cat "$tmp/err")' lacks /$3/"; return; }
  [ -e "$tmp/$1.bin" ] && { fail "$1: left a plan"; return; }
  echo "ok: $1: $(cat "$tmp/err")"
}
bad value '{ update_priority = "high" }' 'streams.update_priority must be "equal" or "low", got "high"'
bad type '{ update_priority = 1 }' 'streams.update_priority must be'
bad not_table '"low"' 'streams must be a table such as \{ update_priority = "low" \}'
bad unknown '{ update_prio = "low" }' 'streams.update_prio is not a field of streams'
if "$DDPC" "$tmp/single_none.lua" -o "$tmp/set2.bin" -q --set streams.update_priority=lowest 2>"$tmp/err"; then fail "--set lowest compiled"
elif [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q '^--set streams.update_priority=lowest: streams.update_priority must be "equal" or "low", got "lowest"$' "$tmp/err"; then
  echo "ok: $(cat "$tmp/err")"
else fail "--set streams.update_priority=lowest: $(cat "$tmp/err")"; fi
exit $fail
