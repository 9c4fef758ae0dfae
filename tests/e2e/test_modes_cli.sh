#!/usr/bin/env bash
# tests/e2e/test_modes_cli.sh: the schedule's `mode` through the command lines (test_modes.c checks the
# numbers through the plan API): `ddpc --set mode=...` compiles tiny.lua in each mode; `ddpc inspect`
# shows the mode in its summary and a forward plan's gradient and optimizer arenas as 0 bytes, its total
# below the train plan's; `ddprun --device ref` runs every step of forward and forward_backward plans
# (1 rank, and the 2-rank toy_ddp.lua) printing loss lines, with the train plan's step-1 loss in the
# metrics and backward_ms / optimizer_ms reported as 0 where the plan has no such phase.
. "$(dirname "$0")/lib.sh"
e2e_tmp modes

# field N of the metrics line of step S: value of "key"
metric() { grep "\"step\": $2," "$1" | sed -E "s/.*\"$3\": ([^,}]*).*/\1/"; }

for mode in train forward forward_backward; do
  "$DDPC" "$DDP_SOURCE_DIR/schedules/tiny.lua" -o "$tmp/$mode.bin" -q --set mode=$mode || fail "tiny $mode does not compile"
  "$DDPC" inspect "$tmp/$mode.bin" >"$tmp/$mode.txt" || fail "inspect $mode"
  "$DDPRUN" "$tmp/$mode.bin" --device ref --metrics "$tmp/$mode.jsonl" >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
    fail "ddprun $mode: $(cat "$tmp/$mode.err")"
  n=$(grep -cE "^step +[0-9]+  loss [0-9.]+" "$tmp/$mode.out")
  [ "$n" = 10 ] || fail "$mode: $n loss lines, expected 10"
  grep -q "final loss" "$tmp/$mode.out" || fail "$mode: no summary line"
done
grep -qE "^mode +0 \(train\)$" "$tmp/train.txt" || fail "inspect: no 'mode 0 (train)'"
grep -qE "^mode +1 \(forward\)$" "$tmp/forward.txt" || fail "inspect: no 'mode 1 (forward)'"
grep -qE "^mode +2 \(forward_backward\)$" "$tmp/forward_backward.txt" || fail "inspect: no 'mode 2 (forward_backward)'"
grep -qE "^step +1  loss [0-9.]+  forward  " "$tmp/forward.out" || fail "forward: the loss line does not name the mode"

# memory table, rank 0: params grads optimizer activations workspace io total
row() { sed -n '/^== memory ==/,/^$/p' "$1" | awk '$1 == "0" { print; exit }'; }
read -r _ _ fg fo fa _ _ ft _ <<<"$(row "$tmp/forward.txt")"
read -r _ _ tg to ta _ _ tt _ <<<"$(row "$tmp/train.txt")"
read -r _ _ bg bo _ _ _ bt _ <<<"$(row "$tmp/forward_backward.txt")"
echo "train: grads $tg optimizer $to activations $ta total $tt; forward: grads $fg optimizer $fo activations $fa" \
     "total $ft; forward_backward: grads $bg optimizer $bo total $bt"
[ "$fg" = 0 ] && [ "$fo" = 0 ] || fail "forward: grads $fg, optimizer $fo bytes (expected 0)"
[ "$bo" = 0 ] && [ "$bg" = "$tg" ] || fail "forward_backward: grads $bg (train $tg), optimizer $bo"
[ "$ft" -lt "$tt" ] && [ "$fa" -lt "$ta" ] && [ "$bt" -lt "$tt" ] || fail "totals not smaller than train's"

# metrics: same step-1 loss, phases the plan lacks are 0
l_train=$(metric "$tmp/train.jsonl" 1 loss)
for mode in forward forward_backward; do
  l=$(metric "$tmp/$mode.jsonl" 1 loss)
  [ -n "$l" ] && [ "$l" = "$l_train" ] || fail "$mode: step-1 loss '$l', train '$l_train'"
  [ "$(metric "$tmp/$mode.jsonl" 2 optimizer_ms)" = 0.0000 ] || fail "$mode: optimizer_ms not 0"
done
[ "$(metric "$tmp/forward.jsonl" 2 backward_ms)" = 0.0000 ] || fail "forward: backward_ms not 0"
awk -v x="$(metric "$tmp/forward.jsonl" 2 forward_ms)" 'BEGIN { exit !(x > 0) }' || fail "forward: forward_ms not > 0"
grep -q '"plan_grads_GiB": 0.0000, "plan_optimizer_GiB": 0.0000' "$tmp/forward.jsonl" || fail "forward: memory line"
echo "tiny step-1 loss $l_train in every mode"

# two ranks: a forward plan has no collectives at all, forward_backward keeps the gradient sync
for mode in forward forward_backward; do
  "$DDPC" "$DDP_SOURCE_DIR/schedules/toy_ddp.lua" -o "$tmp/toy2_$mode.bin" -q --set mode=$mode || fail "toy_ddp $mode"
  "$DDPRUN" "$tmp/toy2_$mode.bin" --device ref >"$tmp/toy2_$mode.out" 2>&1 || fail "toy_ddp $mode: $(cat "$tmp/toy2_$mode.out")"
  [ "$(grep -cE "^step +[0-9]+  loss" "$tmp/toy2_$mode.out")" = 5 ] || fail "toy_ddp $mode: not 5 loss lines"
  "$DDPC" inspect "$tmp/toy2_$mode.bin" >"$tmp/toy2_$mode.txt" || fail "inspect toy_ddp $mode"
done
c=$(grep -cE "^ +[0-9]+ +[0-9]+  (all_reduce|broadcast|reduce_scatter|all_gather) " "$tmp/toy2_forward.txt")
[ "$c" = 0 ] || fail "toy_ddp forward: $c collectives"
c=$(grep -cE "^ +[0-9]+ +[0-9]+  all_reduce " "$tmp/toy2_forward_backward.txt")
[ "$c" -gt 0 ] || fail "toy_ddp forward_backward: no all-reduce"
grep -qE "^parallel +ddp ranks=2, no collectives \(mode forward\)$" "$tmp/toy2_forward.txt" || fail "toy_ddp forward: parallel"
exit $fail
