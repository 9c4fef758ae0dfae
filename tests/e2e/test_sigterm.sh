#!/usr/bin/env bash
# tests/e2e/test_sigterm.sh: SIGTERM/SIGINT stop a run at the next step boundary (issue 14). A 2-rank AdamW
# training (reference executor, ranks as threads) gets SIGTERM while it runs: it must exit with 143, say
# after which step it stopped, leave a complete checkpoint of exactly that step, and a metrics file of
# complete JSON lines ending at that step; resuming from it to that step + 5 is bitwise equal to an
# uninterrupted run of as many steps. SIGINT without a checkpoint folder: exit 130, complete metrics.
. "$(dirname "$0")/lib.sh"
e2e_tmp sigterm
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/" || exit 1
cat >"$tmp/two.lua" <<'LUA'
local models = require "models"
return schedule { model = models.toy(), data = { global_batch = 20, rows = 20, seed = 0 }, precision = "fp32",
                  optimizer = adamw { lr = 1e-3, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
                  parallel = ddp { ranks = 2 }, steps = 100000000, seed = 0 }
LUA
"$DDPC" "$tmp/two.lua" -o "$tmp/two.bin" -q || die "two.lua does not compile"

# finish PID: waits for PID at most 30 s (then SIGKILL), returns its status
finish() {
  local n=0
  while kill -0 "$1" 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  kill -0 "$1" 2>/dev/null && { echo "FAIL: pid $1 still running 30 s after the signal"; kill -KILL "$1"; }
  wait "$1"
}

# complete_metrics FILE: every line a whole JSON object; prints the last step
complete_metrics() {
  python3 - "$1" <<'PY' || return 1
import json, sys
last = 0
for n, line in enumerate(open(sys.argv[1]), 1):
    if not line.endswith("\n"):
        sys.exit(f"line {n} is not terminated")
    row = json.loads(line)
    if "step" in row:
        assert row["step"] == last + 1, f"line {n}: step {row['step']} after {last}"
        assert "loss_rank0" in row, f"line {n}: no loss_rank0"
        last = row["step"]
print(last)
PY
}

"$DDPRUN" "$tmp/two.bin" --device ref --nproc 2 --checkpoint-dir "$tmp/ck" --save-every 1000000 \
  --metrics "$tmp/m.jsonl" --quiet >"$tmp/out" 2>&1 &
pid=$!
sleep 1.5
kill -TERM "$pid"
finish "$pid"
st=$?
cat "$tmp/out"
[ "$st" = 143 ] || die "exit status $st after SIGTERM, expected 143"
stopped=$(sed -n 's/^ddprun: stopped after step \([0-9]*\) of .* (checkpoint written)$/\1/p' "$tmp/out")
[ -n "$stopped" ] || die "no 'stopped after step N ... (checkpoint written)' line"
ck=$(printf '%s/ck/step-%06d' "$tmp" "$stopped")
[ -f "$ck/MANIFEST" ] || die "no complete checkpoint $ck"
[ "$(cat "$tmp/ck/latest")" = "$(basename "$ck")" ] || fail "latest does not name $(basename "$ck")"
last=$(complete_metrics "$tmp/m.jsonl") || die "the metrics file has a broken line"
[ "$last" = "$stopped" ] || fail "the metrics end at step $last, the run stopped after $stopped"
echo "SIGTERM: exit 143 after step $stopped, checkpoint $(basename "$ck"), $last complete metrics lines"

end=$((stopped + 5))
"$DDPRUN" "$tmp/two.bin" --device ref --steps $end --checkpoint-dir "$tmp/ck" --resume >"$tmp/resume.out" 2>&1 ||
  { cat "$tmp/resume.out"; die "resume after SIGTERM"; }
grep -q "resuming from $ck (step $stopped)" "$tmp/resume.out" || fail "no 'resuming from $ck' line"
"$DDPRUN" "$tmp/two.bin" --device ref --steps $end --checkpoint-dir "$tmp/straight" --quiet || die "straight run"
fin=$(printf 'step-%06d' "$end")
for f in model.safetensors optimizer.safetensors; do
  cmp "$tmp/straight/$fin/$f" "$tmp/ck/$fin/$f" || fail "$f after SIGTERM + resume differs from a straight run"
done

# SIGINT, no checkpoint folder: 130, complete metrics. (A background job of a script starts with SIGINT
# ignored, and ddprun keeps an ignored signal ignored: the wrapper restores the default first.)
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
  "$DDPRUN" "$tmp/two.bin" --device ref --metrics "$tmp/i.jsonl" --quiet >"$tmp/int.out" 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
finish "$pid"
st=$?
[ "$st" = 130 ] || { cat "$tmp/int.out"; die "exit status $st after SIGINT, expected 130"; }
grep -q "stopped after step" "$tmp/int.out" || fail "no 'stopped after step' line after SIGINT"
complete_metrics "$tmp/i.jsonl" >/dev/null || fail "the metrics file after SIGINT has a broken line"
# one request delivered twice (GNU timeout signals the command, then its process group; here two kills in a
# row) is one graceful stop with its checkpoint. The kernel may merge two kills into one pending signal, and
# this run may end before a second arrives, so neither case here proves that a repeat within
# DDP_STOP_REPEAT_S is ignored: tests/unit/launch/test_launch_stop.c does, with raise() in a child
"$DDPRUN" "$tmp/two.bin" --device ref --nproc 2 --checkpoint-dir "$tmp/ck2" --save-every 1000000 --quiet >"$tmp/twice.out" 2>&1 &
pid=$!
sleep 1
kill -TERM "$pid"; kill -TERM "$pid"
finish "$pid"
st=$?
[ "$st" = 143 ] && grep -q "stopped after step .* (checkpoint written)$" "$tmp/twice.out" &&
  echo "ok: two SIGTERMs at once: one graceful stop" || { cat "$tmp/twice.out"; fail "two SIGTERMs at once: status $st"; }
timeout -s TERM 1 "$DDPRUN" "$tmp/two.bin" --device ref --nproc 2 --checkpoint-dir "$tmp/ck3" --save-every 1000000 \
  --quiet >"$tmp/timeout.out" 2>&1
grep -q "stopped after step .* (checkpoint written)$" "$tmp/timeout.out" && [ -f "$tmp/ck3/latest" ] &&
  echo "ok: under GNU timeout: one graceful stop" || { cat "$tmp/timeout.out"; fail "under GNU timeout: no graceful stop"; }
# one run per folder: a second run (--resume, as a requeued job would) on a folder a run is using is refused
# in one line, and the first one goes on to its own graceful stop (the second had removed the first's
# checkpoint in progress as a crash's leftover)
"$DDPRUN" "$tmp/two.bin" --device ref --nproc 2 --checkpoint-dir "$tmp/ck4" --save-every 1 --quiet >"$tmp/live.out" 2>&1 &
pid=$!
sleep 1
"$DDPRUN" "$tmp/two.bin" --device ref --nproc 2 --checkpoint-dir "$tmp/ck4" --resume --steps 3 --quiet >"$tmp/second.out" 2>&1
st=$?
[ "$st" != 0 ] && [ "$(wc -l <"$tmp/second.out")" = 1 ] &&
  grep -q "checkpoint-dir $tmp/ck4 is in use by another run (it holds $tmp/ck4/.lock): one run per folder$" "$tmp/second.out" &&
  echo "ok: a second run on a folder in use: $(cat "$tmp/second.out")" ||
  fail "a second run on a folder in use: status $st: $(cat "$tmp/second.out")"
kill -TERM "$pid"
finish "$pid"
st=$?
[ "$st" = 143 ] && grep -q "stopped after step .* (checkpoint written)$" "$tmp/live.out" ||
  { cat "$tmp/live.out"; fail "the first run beside the refused second: status $st"; }
# a SIGTERM the run was started with ignored (nohup-like: the parent's SIG_IGN is inherited) stays ignored
( trap '' TERM; exec "$DDPRUN" "$tmp/two.bin" --device ref --nproc 2 --quiet ) >"$tmp/ign.out" 2>&1 &
pid=$!
sleep 1
kill -TERM "$pid"
sleep 1
if kill -0 "$pid" 2>/dev/null; then echo "ok: an ignored SIGTERM stays ignored"; kill -KILL "$pid"; wait "$pid" 2>/dev/null
else wait "$pid"; fail "a SIGTERM ignored at start ended the run (status $?): $(cat "$tmp/ign.out")"; fi
[ "$fail" = 0 ] && echo "SIGTERM and SIGINT stop at a step boundary; resume is bitwise equal"
exit $fail
