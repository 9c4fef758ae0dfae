#!/usr/bin/env bash
# tests/e2e/test_nccl_config.sh (cpu): the schedule's `nccl` field (compiler/frontend/nccl.c):
#  - { cta_policy = "efficiency", max_ctas = 8, register = true } reaches the plan: `ddpc inspect` prints
#    nccl_cta_policy 1 (efficiency), nccl_max_ctas 8, nccl_register 1; without the field the defaults
#    (default, 0 = NCCL's, 0); the plan runs on the reference executor (which has no NCCL) as before;
#  - register = "window" (arenas from ncclMemAlloc, symmetric windows) reads nccl_register 2 (window),
#    "buffers" 1 (buffers) like true, "none" 0 like false; inspect lists the windows (text and --json);
#  - --set creates the table when the schedule has none (--set nccl.register=true), and names itself in
#    a refusal;
#  - nccl.all_reduce = "peer" / "peer_copy": inspect lists a peer barrier per bucket and one after the last
#    update, updates with peers, no all-reduce, and with "peer_copy" a copy per bucket into its own buffer;
#  - nccl.movement = "peer_copy": every all-to-all and all-gather of the step (DDP's all-to-all all-reduce, ZeRO-2's
#    all-to-all reduce-scatter and parameter gathers) says path=peer_copy, nothing else does, the summary and
#    --json count them and the parallel line ends with movement=peer_copy;
#  - bad values are refused in one line naming the field, with a non-zero exit and no plan written
#    (movement also with register = "window" and where the step has nothing to move).
# The GPU side (the communicator built with them, the arenas registered, the run line's "nccl") is in
# tests/e2e/gpu_ddp.sh.
. "$(dirname "$0")/lib.sh"
e2e_tmp nccl_config
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"
# sched NAME NCCL_VALUE: $tmp/NAME.lua, the tiny DDP schedule with nccl = NCCL_VALUE (none when empty)
sched() {
  local field=""
  [ -n "$2" ] && field="nccl = $2,"
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = models.tiny(), data = { global_batch = 8, tokens = "pattern", seed = 1 },
                  precision = "fp32", optimizer = adamw { lr = 3e-3 },
                  parallel = ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.1, overlap = "backward" },
                  $field steps = 2, seed = 1 }
LUA
}
meta() { "$DDPC" inspect "$tmp/$1.bin" | awk -v k="$2" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }'; }

sched on '{ cta_policy = "efficiency", max_ctas = 8, register = true }'
sched off ''
for n in on off; do "$DDPC" "$tmp/$n.lua" -o "$tmp/$n.bin" -q || fail "$n does not compile"; done
sched win '{ register = "window", cta_policy = "zero" }'
sched buf '{ register = "buffers" }'
sched none '{ register = "none" }'
for n in win buf none; do "$DDPC" "$tmp/$n.lua" -o "$tmp/$n.bin" -q || fail "$n does not compile"; done
for kv in "on nccl_cta_policy 1 (efficiency)" "on nccl_max_ctas 8" "on nccl_register 1 (buffers)" \
          "off nccl_cta_policy 0 (default)" "off nccl_max_ctas 0" "off nccl_register 0 (none)" \
          "win nccl_register 2 (window)" "win nccl_cta_policy 2 (zero)" "buf nccl_register 1 (buffers)" \
          "none nccl_register 0 (none)"; do
  set -- $kv
  n=$1 k=$2; shift 2
  got=$(meta "$n" "$k")
  [ "$got" = "$*" ] && echo "ok: $n: $k $got" || fail "$n: $k is '$got', expected '$*'"
done
for n in on win; do
  "$DDPRUN" "$tmp/$n.bin" --device ref --nproc 2 --quiet && echo "ok: $n runs on the reference executor" ||
    fail "the plan $n with nccl = {...} does not run on the reference executor"
done
# the arenas a window plan registers (plan/windows.c): params and grads, whole 2 MiB windows, on the world's
# communicator; none listed for the other plans; --json likewise; a pipeline without collectives has none
got=$("$DDPC" inspect "$tmp/win.bin" | grep '^nccl_windows')
[ "$got" = "nccl_windows           world: params 2.00 MiB, grads 2.00 MiB" ] && echo "ok: $got" || fail "win: '$got'"
[ -z "$("$DDPC" inspect "$tmp/on.bin" | grep '^nccl_windows')" ] && echo "ok: no nccl_windows line without windows" ||
  fail "on: an nccl_windows line"
"$DDPC" inspect "$tmp/win.bin" --json | python3 -c '
import json, sys
w = json.load(sys.stdin)["nccl_windows"]
assert w == [{"comm": 0, "arena": "params", "bytes": 2 << 20}, {"comm": 0, "arena": "grads", "bytes": 2 << 20}], w
print("ok: --json nccl_windows", w)' || fail "win: --json nccl_windows"
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_pipeline.lua" -o "$tmp/pipe.bin" -q --set nccl.register=window ||
  fail "tiny_pipeline with windows does not compile"
got=$("$DDPC" inspect "$tmp/pipe.bin" | grep '^nccl_windows')
[ "$got" = "nccl_windows           none (no collectives)" ] && echo "ok: pipeline: $got" || fail "pipeline: '$got'"
"$DDPC" "$tmp/off.lua" -o "$tmp/set.bin" -q --set nccl.cta_policy=zero --set nccl.register=true || fail "--set nccl.* refused"
[ "$(meta set nccl_cta_policy)" = "2 (zero)" ] && [ "$(meta set nccl_register)" = "1 (buffers)" ] &&
  echo "ok: --set nccl.cta_policy=zero --set nccl.register=true" || fail "--set nccl.*: $("$DDPC" inspect "$tmp/set.bin" | grep nccl)"
if "$DDPC" "$tmp/off.lua" -o "$tmp/set2.bin" -q --set nccl.max_ctas=99 2>"$tmp/err"; then fail "--set nccl.max_ctas=99 compiled"
elif [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q '^--set nccl.max_ctas=99: nccl.max_ctas must be at most 64, got 99$' "$tmp/err"; then
  echo "ok: $(cat "$tmp/err")"
else fail "--set nccl.max_ctas=99: $(cat "$tmp/err")"; fi
"$DDPC" "$tmp/off.lua" -o "$tmp/setw.bin" -q --set nccl.register=window || fail "--set nccl.register=window refused"
[ "$(meta setw nccl_register)" = "2 (window)" ] && echo "ok: --set nccl.register=window" ||
  fail "--set nccl.register=window: $(meta setw nccl_register)"

# bad NAME VALUE PATTERN: the schedule with that value is refused in one line matching PATTERN
bad() {
  sched "$1" "$2"
  refused "$1" "$3"
}
bad policy '{ cta_policy = "fast" }' 'nccl.cta_policy must be one of "default", "efficiency" or "zero", got "fast"'
bad ctas_zero '{ max_ctas = 0 }' 'nccl.max_ctas must be a positive integer, got 0'
bad ctas_big '{ max_ctas = 65 }' 'nccl.max_ctas must be at most 64, got 65'
bad ctas_frac '{ max_ctas = 2.5 }' 'nccl.max_ctas'
bad not_table '5' 'nccl must be a table such as'
bad unknown '{ registr = true }' 'nccl.registr is not a field of nccl \(did you mean register\?\)'
bad register '{ register = "yes" }' 'nccl.register must be one of "none", "buffers" or "window", got "yes"'
bad register_num '{ register = 1 }' 'nccl.register must be true, false, "none", "buffers" or "window", got 1'
bad reduce_scatter '{ reduce_scatter = "ring" }' 'nccl.reduce_scatter must be "nccl" or "alltoall", got "ring"'
bad a2a_unsharded '{ reduce_scatter = "alltoall" }' 'nccl.reduce_scatter "alltoall" needs a ZeRO level that reduce-scatters gradients \(shard = "zero1", "zero2" or "zero3"\), this schedule has shard = "none"'
bad all_reduce '{ all_reduce = "tree" }' 'nccl.all_reduce must be one of "nccl", "alltoall", "peer" or "peer_copy", got "tree"'
# one rank: no communicator to register with (the tiny schedule on one rank, the value given by --set)
rm -f "$tmp/reg1.bin"
if "$DDPC" "$DDP_SOURCE_DIR/schedules/tiny.lua" -o "$tmp/reg1.bin" -q --set nccl.register=true 2>"$tmp/err"; then
  fail "register on one rank: compiled"
elif [ "$(wc -l <"$tmp/err")" = 1 ] && [ ! -e "$tmp/reg1.bin" ] &&
  grep -q 'nccl.register = "buffers" needs more than one rank: a single rank has no communicator' "$tmp/err"; then
  echo "ok: register on one rank: $(cat "$tmp/err")"
else
  fail "register on one rank: $(cat "$tmp/err")"
fi
bad movement '{ movement = "ce" }' 'nccl.movement must be "nccl" or "peer_copy", got "ce"'
bad movement_window '{ movement = "peer_copy", all_reduce = "alltoall", register = "window" }' 'nccl.movement "peer_copy" maps the peers. arenas through CUDA IPC, which cannot map the ncclMemAlloc memory of register = "window"'
bad movement_nothing '{ movement = "peer_copy" }' 'nccl.movement = "peer_copy": this schedule.s step has no all-to-all or all-gather to move'
bad peer_no_overlap '{ all_reduce = "peer" }' 'nccl.all_reduce "peer" needs data parallelism on more than one rank with sync = "bucketed", overlap = "backward" and optimizer_overlap = true \(each bucket.s AdamW reads every rank.s gradient\), without ZeRO levels, pipelines or a tensor axis, in mode "train"'
# --set naming the other fields: each refusal is one line, no plan written
for set in mode=forward parallel.shard=zero1 optimizer.clip=1.0; do
  rm -f "$tmp/peer_bad.bin"
  if "$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_ddp.lua" -o "$tmp/peer_bad.bin" -q --set parallel.optimizer_overlap=true \
    --set nccl.all_reduce=peer --set "$set" 2>"$tmp/err"; then
    fail "all_reduce=peer with $set compiled"
  elif [ "$(wc -l <"$tmp/err")" = 1 ] && [ ! -e "$tmp/peer_bad.bin" ]; then
    echo "ok: all_reduce=peer with $set: $(cat "$tmp/err")"
  else fail "all_reduce=peer with $set: $(cat "$tmp/err")"; fi
done
if "$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_zero2.lua" -o "$tmp/ar_zero.bin" -q --set nccl.all_reduce=alltoall 2>"$tmp/err"; then
  fail "all_reduce=alltoall under ZeRO-2 compiled"
elif [ "$(wc -l <"$tmp/err")" = 1 ] && [ ! -e "$tmp/ar_zero.bin" ] &&
  grep -q '^--set nccl.all_reduce=alltoall: nccl.all_reduce "alltoall" needs data parallelism on more than one rank with sync = "flat" or "bucketed", without ZeRO levels' "$tmp/err"; then
  echo "ok: $(cat "$tmp/err")"
else fail "all_reduce=alltoall under ZeRO-2: $(cat "$tmp/err")"; fi

# the all-to-all reductions in the compiled program: parallel_ends NAME TEXT checks the parallel line of
# $tmp/NAME.txt (an inspect listing), lines NAME PATTERN counts its lines matching PATTERN
parallel_ends() {
  grep -q "^parallel .*$2\$" "$tmp/$1.txt" && echo "ok: $1: parallel line" || fail "$1: $(grep '^parallel' "$tmp/$1.txt")"
}
lines() { grep -c "$2" "$tmp/$1.txt"; }
# all_reduce = "alltoall" (bucketed DDP): each bucket's all-reduce becomes an all_to_all into sync.received,
# a SUM_CHUNKS into the rank's chunk and an in-place all_gather, between one pair of timers
sched a2a_ar '{ all_reduce = "alltoall", register = "window", cta_policy = "zero" }'
"$DDPC" "$tmp/a2a_ar.lua" -o "$tmp/a2a_ar.bin" -q || fail "a2a_ar does not compile"
"$DDPC" inspect "$tmp/a2a_ar.bin" --rank 1 >"$tmp/a2a_ar.txt" || fail "inspect a2a_ar"
parallel_ends a2a_ar ' overlap=backward all_reduce=alltoall'
n_a2a=$(lines a2a_ar ' all_to_all .*recv=sync.received comm=0  # all_reduce.bucket[0-9]*.all_to_all$')
n_sum=$(lines a2a_ar ' kernel .*SUM_CHUNKS.*# all_reduce.bucket[0-9]*.sum_chunks$')
n_ag=$(lines a2a_ar ' all_gather .*# all_reduce.bucket[0-9]*.all_gather$')
n_ar=$(lines a2a_ar ' all_reduce  .*# all_reduce.bucket')
[ "$n_a2a" -gt 0 ] && [ "$n_a2a" = "$n_sum" ] && [ "$n_a2a" = "$n_ag" ] && [ "$n_ar" = 0 ] &&
  echo "ok: a2a_ar: $n_a2a buckets as all-to-all, sum, all-gather" || fail "a2a_ar: $n_a2a / $n_sum / $n_ag / $n_ar"
# all_reduce = "peer" / "peer_copy" (bucketed DDP with the update in the backward): no all-reduce; a
# peer_barrier per bucket on the communication stream and one after the last update, each update an ADAMW
# with peers (i[1] = 2); "peer_copy" also a peer_copy per bucket into its own buffer, which the update reads
for m in peer peer_copy; do
  "$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_ddp.lua" -o "$tmp/$m.bin" -q --set parallel.optimizer_overlap=true \
    --set nccl.all_reduce=$m || fail "tiny_ddp with all_reduce=$m does not compile"
  "$DDPC" inspect "$tmp/$m.bin" --rank 1 >"$tmp/$m.txt" || fail "inspect $m"
  parallel_ends $m " optimizer_overlap all_reduce=$m"
  n_bar=$(lines $m ' peer_barrier  *# peer_barrier.bucket[0-9]*$') n_end=$(lines $m ' peer_barrier  *# peer_barrier.step_end$')
  n_upd=$(lines $m ' kernel .*ADAMW.* i=\[[0-9]*,2\].*# optimizer.bucket') n_ar=$(lines $m ' all_reduce ')
  n_cp=$(lines $m ' peer_copy .*p1=sync.peer_received.bucket[0-9]*:f32 .*# peer_copy.bucket')
  n_rd=$(lines $m ' kernel .*ADAMW.* p7=sync.peer_received.bucket[0-9]*:f32 ')
  want_cp=0; [ $m = peer_copy ] && want_cp=$n_bar
  [ "$n_bar" -gt 0 ] && [ "$n_end" = 1 ] && [ "$n_upd" = "$n_bar" ] && [ "$n_ar" = 0 ] && [ "$n_cp" = "$want_cp" ] &&
    [ "$n_rd" = "$want_cp" ] && echo "ok: $m: $n_bar buckets: barrier, $n_cp copies, updates with peers; no all-reduce" ||
    fail "$m: $n_bar barriers, $n_end at the end, $n_upd updates with peers, $n_cp copies, $n_rd updates reading them, $n_ar all-reduces"
done
# reduce_scatter = "alltoall" (ZeRO-2 here): each group's reduce-scatter becomes an all_to_all into
# zero.received and a SUM_CHUNKS of the received chunks into the rank's slice, both between one pair of
# communication timers on the communication stream; the parallel line says so, and with windows the
# activations (where zero.received lives) are a window too
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_zero2.lua" -o "$tmp/a2a.bin" -q --set nccl.reduce_scatter=alltoall \
  --set nccl.register=window || fail "tiny_zero2 with reduce_scatter=alltoall does not compile"
"$DDPC" inspect "$tmp/a2a.bin" --rank 0 >"$tmp/a2a.txt" || fail "inspect a2a"
parallel_ends a2a ' shard=zero2 reduce_scatter=alltoall'
n_a2a=$(lines a2a ' all_to_all .*send=bucket[0-9]*.grads recv=zero.received comm=0  # zero.all_to_all.bucket')
n_sum=$(lines a2a ' kernel .*SUM_CHUNKS.*# zero.sum_chunks.bucket')
n_rs=$(lines a2a ' reduce_scatter ')
[ "$n_a2a" -gt 0 ] && [ "$n_a2a" = "$n_sum" ] && [ "$n_rs" = 0 ] && echo "ok: a2a: $n_a2a all-to-alls, $n_sum sums, no reduce-scatter" ||
  fail "a2a: $n_a2a all-to-alls, $n_sum sums, $n_rs reduce-scatters"
grep -q '^nccl_windows .*activations' "$tmp/a2a.txt" && echo "ok: a2a: $(grep '^nccl_windows' "$tmp/a2a.txt")" ||
  fail "a2a: $(grep '^nccl_windows' "$tmp/a2a.txt")"
# movement = "peer_copy": DDP's all-to-all all-reduce and ZeRO-2's all-to-all reduce-scatter with its gathers
sched mv_ar '{ all_reduce = "alltoall", movement = "peer_copy" }'
"$DDPC" "$tmp/mv_ar.lua" -o "$tmp/mv_ar.bin" -q || fail "mv_ar does not compile"
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_zero2.lua" -o "$tmp/mv_z2.bin" -q --set nccl.reduce_scatter=alltoall \
  --set nccl.movement=peer_copy || fail "tiny_zero2 with movement=peer_copy does not compile"
for m in mv_ar mv_z2; do
  "$DDPC" inspect "$tmp/$m.bin" --rank 0 >"$tmp/$m.txt" || fail "inspect $m"
  sed -n '/^== program rank 0 step ==/,$p' "$tmp/$m.txt" >"$tmp/${m}_step.txt" # the init program's gathers stay NCCL's
  n_mv=$(lines ${m}_step ' \(all_to_all\|all_gather\) .* comm=0 path=peer_copy  #')
  n_all=$(lines ${m}_step ' \(all_to_all\|all_gather\) ') n_path=$(lines $m 'path=')
  said=$(awk '$1 == "nccl_movement" { print $2, $3 }' "$tmp/$m.txt")
  js=$("$DDPC" inspect "$tmp/$m.bin" --json | python3 -c 'import json,sys; m = json.load(sys.stdin)["nccl_movement"]; print(m["path"], m["peer_copied"])')
  [ "$n_mv" -gt 0 ] && [ "$n_mv" = "$n_all" ] && [ "$n_path" = "$n_mv" ] && [ "$said" = "peer_copy ($n_mv" ] &&
    [ "$js" = "peer_copy $n_mv" ] && grep -q '^parallel .* movement=peer_copy$' "$tmp/$m.txt" &&
    echo "ok: $m: $n_mv all-to-alls and all-gathers moved by copy-engine pulls" ||
    fail "$m: $n_mv of $n_all moved, $n_path paths, summary '$said', json '$js', $(grep '^parallel' "$tmp/$m.txt")"
done
js=$("$DDPC" inspect "$tmp/a2a_ar.bin" --json | python3 -c 'import json,sys; m = json.load(sys.stdin)["nccl_movement"]; print(m["path"], m["peer_copied"])')
[ "$js" = "nccl 0" ] && ! grep -q 'path=\|^nccl_movement' "$tmp/a2a_ar.txt" && echo "ok: a2a_ar: NCCL moves its data" ||
  fail "a2a_ar: json '$js', $(grep -c 'path=' "$tmp/a2a_ar.txt") paths"
exit $fail
