#!/usr/bin/env bash
# tests/e2e/test_bad_input.sh: every kind of bad input gets one clear line naming what is wrong, a non-zero
# exit, and leaves no partial output: bad schedules (syntax, types, missing fields, sizes, sandbox
# escapes, an unknown mode; the front end's own tests check each message), an unknown arch, a missing
# token file at run time, a token id >= vocab, corrupted, truncated and foreign plans, a plan launched
# with the wrong number of ranks, checkpoints asked of a plan that does not train, bad command lines.
. "$(dirname "$0")/lib.sh"
e2e_tmp bad
# expect_fail NAME PATTERN OUTPUT_FILE_THAT_MUST_NOT_EXIST cmd...
expect_fail() {
  local name=$1 pattern=$2 out=$3; shift 3
  if "$@" >"$tmp/out" 2>"$tmp/err"; then fail "$name: succeeded"; return; fi
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$lines" != 1 ]; then fail "$name: $lines lines on stderr:"; cat "$tmp/err"; return; fi
  if ! grep -qE -- "$pattern" "$tmp/err"; then fail "$name: '$(cat "$tmp/err")' lacks /$pattern/"; return; fi
  if [ -n "$out" ] && ls "$out"* >/dev/null 2>&1; then fail "$name: left $(ls "$out"*)"; return; fi
  echo "ok: $name: $(cat "$tmp/err")"
}
bad="$DDP_SOURCE_DIR/tests/fixtures/schedules_bad"
# a diverging run (SGD at lr 1e30) stops at the first step whose loss is not finite, with no checkpoint of it
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/nan.bin" -q --set optimizer.lr=1e30 || fail "the diverging plan"
expect_fail loss_nan "^ddprun: rank 0: the loss is -?nan at step 2$" "" \
  "$DDPRUN" "$tmp/nan.bin" --device ref --steps 5 --checkpoint-dir "$tmp/nan_ck" --save-every 1 --quiet
[ -e "$tmp/nan_ck/step-000002" ] && fail "loss_nan: a checkpoint of the step whose loss is nan"
expect_fail syntax "syntax.lua:[0-9]+:" "$tmp/p.bin" "$DDPC" "$bad/syntax.lua" -o "$tmp/p.bin"
expect_fail wrong_type "wrong_type.lua:[0-9]+:.*must be" "$tmp/p.bin" "$DDPC" "$bad/wrong_type.lua" -o "$tmp/p.bin"
expect_fail missing_field "missing.lua:[0-9]+:.*required" "$tmp/p.bin" "$DDPC" "$bad/missing.lua" -o "$tmp/p.bin"
expect_fail heads "heads.lua:[0-9]+:.*heads" "$tmp/p.bin" "$DDPC" "$bad/heads.lua" -o "$tmp/p.bin"
expect_fail batch_ranks "batch_ranks.lua:[0-9]+:.*divisible" "$tmp/p.bin" "$DDPC" "$bad/batch_ranks.lua" -o "$tmp/p.bin"
expect_fail absurd "absurd.lua:[0-9]+:" "$tmp/p.bin" "$DDPC" "$bad/absurd.lua" -o "$tmp/p.bin"
expect_fail os_execute "os_execute.lua:[0-9]+:.*os" "$tmp/p.bin" "$DDPC" "$bad/os_execute.lua" -o "$tmp/p.bin"
expect_fail io_open "io_open.lua:[0-9]+:.*io" "$tmp/p.bin" "$DDPC" "$bad/io_open.lua" -o "$tmp/p.bin"
expect_fail require_up "require_up.lua:[0-9]+:.*\.\./x" "$tmp/p.bin" "$DDPC" "$bad/require_up.lua" -o "$tmp/p.bin"
expect_fail missing_tokens "missing_tokens.lua:[0-9]+:.*not found" "$tmp/p.bin" "$DDPC" "$bad/missing_tokens.lua" -o "$tmp/p.bin"
expect_fail bad_set "--set" "$tmp/p.bin" "$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/p.bin" --set optimizer.lr=-1
expect_fail bad_mode "mode.lua:[0-9]+: mode must be one of \"train\", \"forward\" or \"forward_backward\", got \"inference\"" \
  "$tmp/p.bin" "$DDPC" "$bad/mode.lua" -o "$tmp/p.bin"
expect_fail bad_mode_set "^--set mode=eval: mode must be one of" "$tmp/p.bin" "$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" \
  -o "$tmp/p.bin" --set mode=eval
expect_fail unknown_arch "arch sm_13" "$tmp/p.bin" "$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/p.bin" --arch sm_13
expect_fail no_schedule "cannot|No such|not found" "$tmp/p.bin" "$DDPC" "$tmp/none.lua" -o "$tmp/p.bin"
expect_fail unwritable "$tmp/nodir/p.bin" "$tmp/nodir/p.bin" "$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/nodir/p.bin"

# token files: a token id >= vocab, and a file that disappears after compiling
cat >"$tmp/tokens.lua" <<LUA
local models = require "models"
return schedule { model = models.tiny(), data = { global_batch = 2, tokens = "tokens.bin" },
                  optimizer = adamw { lr = 1e-3 }, steps = 2 }
LUA
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"
python3 - "$tmp/tokens.bin" <<'PY'
import struct, sys
toks = [i % 200 for i in range(400)]
toks[37] = 300   # vocab of models.tiny() is 256
open(sys.argv[1], "wb").write(struct.pack("<%dH" % len(toks), *toks))
PY
"$DDPC" "$tmp/tokens.lua" -o "$tmp/tok.bin" -q || fail "token schedule does not compile"
expect_fail token_vocab "token 300 at offset 37 is >= vocab 256" "" "$DDPRUN" "$tmp/tok.bin" --device ref --quiet
mv "$tmp/tokens.bin" "$tmp/tokens.moved"
expect_fail token_file_gone "tokens.bin" "" "$DDPRUN" "$tmp/tok.bin" --device ref --quiet
# a token file ddpc's user cannot read is refused at compile time (ddprun would refuse it at start); root reads
# any file, so this runs as nobody where the test runs as root and runuser can give nobody the build
printf '\x01\x00%.0s' $(seq 1 64) >"$tmp/noread.bin"
chmod 000 "$tmp/noread.bin"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && runuser -u nobody -- test -x "$DDPC" -a -r "$tmp/tokens.lua"; then
  mkdir -p -m 777 "$tmp/nobody" # a folder nobody may write the plan into (ddpc checks -o's folder first)
  if runuser -u nobody -- "$DDPC" "$tmp/tokens.lua" -o "$tmp/nobody/plan.bin" --set data.tokens=noread.bin 2>"$tmp/err" >/dev/null; then
    fail "token_unreadable: compiled"
  elif [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q 'data.tokens: cannot be read: .*noread.bin (Permission denied)$' "$tmp/err"; then
    echo "ok: token_unreadable: $(cat "$tmp/err")"
  else
    fail "token_unreadable: $(cat "$tmp/err")"
  fi
else
  echo "not checked here: an unreadable token file (needs root and runuser to run ddpc as nobody)"
fi
# a token file cut short while a run reads it: one line naming the file (a mapped file gave SIGBUS, exit 135)
python3 - "$tmp/tokens.bin" <<'PY'
import struct, sys
open(sys.argv[1], "wb").write(struct.pack("<%dH" % 2000000, *[i % 200 for i in range(2000000)]))
PY
"$DDPC" "$tmp/tokens.lua" -o "$tmp/tok_live.bin" -q || fail "token schedule does not compile"
"$DDPRUN" "$tmp/tok_live.bin" --device ref --quiet --steps 1000000 >"$tmp/out" 2>"$tmp/err" &
live=$!
sleep 1
truncate -s 100 "$tmp/tokens.bin"
wait $live
rc=$?
if [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
  grep -q 'tokens.bin: cannot read tokens .* the file held 2000000 tokens when the run began; was it changed during the run?$' "$tmp/err"; then
  echo "ok: token_file_cut: $(cat "$tmp/err")"
else
  fail "token_file_cut: exit $rc: $(head -3 "$tmp/err")"
fi

# plans: corrupted, truncated, not a plan, missing, wrong world
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/toy.bin" -q || fail=1
size=$(stat -c %s "$tmp/toy.bin")
cp "$tmp/toy.bin" "$tmp/corrupt.bin"
printf '\x55' | dd of="$tmp/corrupt.bin" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
head -c $((size - 100)) "$tmp/toy.bin" >"$tmp/trunc.bin"
echo "hello" >"$tmp/text.bin"
expect_fail corrupted "corrupt" "" "$DDPRUN" "$tmp/corrupt.bin" --device ref
expect_fail truncated "truncated" "" "$DDPRUN" "$tmp/trunc.bin" --device ref
expect_fail not_a_plan "not a ddpc plan" "" "$DDPRUN" "$tmp/text.bin" --device ref
expect_fail missing_plan "none.bin" "" "$DDPRUN" "$tmp/none.bin" --device ref
expect_fail inspect_corrupted "corrupt" "" "$DDPC" inspect "$tmp/corrupt.bin"
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy_ddp.lua" -o "$tmp/toy2.bin" -q || fail=1
expect_fail world_mismatch "compiled for 2 ranks, launched with --nproc 3" "" "$DDPRUN" "$tmp/toy2.bin" --device ref --nproc 3
expect_fail bad_flag "unknown option '--bogus'" "" "$DDPRUN" "$tmp/toy.bin" --bogus
expect_fail bad_steps "^ddprun: --steps: '-3' is not an integer in 0..1000000000$" "" "$DDPRUN" "$tmp/toy.bin" --steps -3
expect_fail resume_no_dir "--resume needs" "" "$DDPRUN" "$tmp/toy.bin" --resume
# a plan that does not train has nothing to checkpoint: refused before it runs, no folder made
for mode in forward forward_backward; do
  "$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/toy_$mode.bin" -q --set mode=$mode || fail=1
  expect_fail "checkpoint_$mode" "toy_$mode.bin: --checkpoint-dir needs a plan that trains, this one's mode is \"$mode\"" \
    "$tmp/ck_$mode" "$DDPRUN" "$tmp/toy_$mode.bin" --device ref --checkpoint-dir "$tmp/ck_$mode"
  expect_fail "resume_$mode" "--checkpoint-dir needs a plan that trains" "$tmp/ck_$mode" \
    "$DDPRUN" "$tmp/toy_$mode.bin" --device ref --checkpoint-dir "$tmp/ck_$mode" --resume
done
# without a GPU, a plan too large for the reference executor is refused with the estimate
if ! nvidia-smi -L >/dev/null 2>&1; then
  "$DDPC" "$DDP_SOURCE_DIR/schedules/bench_xl.lua" -o "$tmp/xl.bin" -q || fail=1
  expect_fail no_gpu_big_plan "reference executor would need about [0-9]+ s" "" "$DDPRUN" "$tmp/xl.bin"
  expect_fail cuda_without_gpu "--device cuda: .*(driver|GPU)" "" "$DDPRUN" "$tmp/xl.bin" --device cuda
fi
exit $fail
