#!/usr/bin/env bash
# tests/e2e/test_ckpt_kill.sh: checkpoints survive SIGKILL at any moment (issue 11). A small AdamW training
# (ToyModel, 1 rank, reference executor) runs uninterrupted to its end;
# then the same training is seeded with its step-0 checkpoint (--save-initial --steps 0) and started 100
# times with --resume and a checkpoint after every step, each killed with SIGKILL after a random 0-300 ms, so many kills land while a
# checkpoint is being written, and finally resumed to the end. The final checkpoint must be bitwise equal to
# the uninterrupted one; every restart must find a complete checkpoint; the clean last start must remove
# what the kills left (.tmp-*) and keep only --keep-checkpoints folders. Then: a corrupt newest checkpoint
# is named and the previous one used.
. "$(dirname "$0")/lib.sh"
e2e_tmp ckpt_kill
# Long enough that no killed run reaches the end: a run saves every step (a few ms each with fsync), so
# 100 runs of at most 300 ms stay far below it, while the uninterrupted run takes about 1.5 s.
STEPS=30000
last_dir=$(printf 'step-%06d' $STEPS)
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/" || exit 1
cat >"$tmp/kill.lua" <<'LUA'
local models = require "models"
return schedule { model = models.toy(), data = { global_batch = 20, rows = 20, seed = 0 }, precision = "fp32",
                  optimizer = adamw { lr = 1e-3, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
                  parallel = single(), steps = 3000, seed = 0 }
LUA
"$DDPC" "$tmp/kill.lua" -o "$tmp/plan.bin" -q || die "kill.lua does not compile"
run=("$DDPRUN" "$tmp/plan.bin" --device ref --steps $STEPS --save-every 1 --quiet)
t0=$SECONDS
"$DDPRUN" "$tmp/plan.bin" --device ref --steps $STEPS --checkpoint-dir "$tmp/straight" --quiet || die "uninterrupted run"
"$DDPRUN" "$tmp/plan.bin" --device ref --steps 0 --save-initial --checkpoint-dir "$tmp/killed" --quiet ||
  die "the step-0 checkpoint (--save-initial --steps 0)"
[ -f "$tmp/killed/step-000000/MANIFEST" ] || die "--save-initial wrote no step-000000"
mid_write=0 resumed=0 progress=0 last=0
for i in $(seq 1 100); do
  "${run[@]}" --checkpoint-dir "$tmp/killed" --resume >"$tmp/out.$i" 2>&1 &
  pid=$!
  sleep "$(printf '0.%03d' $((RANDOM % 300)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  st=$?
  [ "$st" = 0 ] && die "run $i finished all $STEPS steps before its kill: make STEPS larger"
  [ "$st" = 137 ] || { cat "$tmp/out.$i"; die "run $i ended with status $st before its kill"; }
  ls -A "$tmp/killed" | grep -q '^\.tmp-' && mid_write=$((mid_write + 1))
  now=$(cat "$tmp/killed/latest" 2>/dev/null | sed 's/step-0*//')
  [ "${now:-0}" -gt "$last" ] && progress=$((progress + 1))
  last=${now:-0}
done
echo "($((SECONDS - t0)) s) 100 kills: $mid_write left a temporary checkpoint folder, $progress advanced the newest checkpoint (to step $last)"
"$DDPRUN" "$tmp/plan.bin" --device ref --steps $STEPS --quiet --checkpoint-dir "$tmp/killed" --resume \
  --keep-checkpoints 2 >"$tmp/final.out" 2>&1 ||
  { cat "$tmp/final.out"; die "the final resume failed"; }
echo "($((SECONDS - t0)) s) resumed to the end"
for f in model.safetensors optimizer.safetensors MANIFEST; do
  cmp "$tmp/straight/$last_dir/$f" "$tmp/killed/$last_dir/$f" || fail "$f differs from the uninterrupted run's"
done
left=$(find "$tmp/killed" -name '.tmp-*' -o -name '*.tmp.*' | wc -l)
[ "$left" = 0 ] || fail "$left temporaries remain after a clean start"
n=$(ls -d "$tmp/killed"/step-* | wc -l)
[ "$n" = 2 ] || fail "$n step folders kept, --keep-checkpoints 2 asked for 2"
[ "$mid_write" -gt 0 ] || fail "no kill landed during a checkpoint write: the test did not test that"
[ "$progress" -ge 3 ] || fail "only $progress of 100 runs advanced: the kills come too early to test resuming"

# stray temporaries are removed and said so
mkdir -p "$tmp/killed/.tmp-step-009999-1"
"$DDPRUN" "$tmp/plan.bin" --device ref --steps $STEPS --checkpoint-dir "$tmp/killed" --resume >"$tmp/clean.out" 2>&1 ||
  { cat "$tmp/clean.out"; die "clean start"; }
grep -q "removed $tmp/killed/.tmp-step-009999-1" "$tmp/clean.out" || fail "the stray folder's removal is not said"
grep -q "resuming from $tmp/killed/$last_dir (step $STEPS)" "$tmp/clean.out" || fail "no 'resuming from' line"
[ -e "$tmp/killed/.tmp-step-009999-1" ] && fail "the stray folder is still there"

# a corrupt newest checkpoint: named, and the previous one is used
prev=$(cd "$tmp/killed" && ls -d step-* | sort | tail -2 | head -1)
printf 'X' | dd of="$tmp/killed/$last_dir/model.safetensors" bs=1 seek=200 conv=notrunc 2>/dev/null
"$DDPRUN" "$tmp/plan.bin" --device ref --steps $STEPS --checkpoint-dir "$tmp/killed" --resume >"$tmp/corrupt.out" 2>&1 ||
  { cat "$tmp/corrupt.out"; die "resume with a corrupt newest checkpoint"; }
grep -q "$last_dir is not a complete checkpoint (.*CRC32.*); moved to $tmp/killed/damaged-$last_dir; trying the previous one" \
  "$tmp/corrupt.out" || fail "the corrupt checkpoint is not named, or not moved aside"
# moved aside, it is not one of the --keep-checkpoints newest: the rotation after the redone step keeps $prev
[ -d "$tmp/killed/damaged-$last_dir" ] && [ -d "$tmp/killed/$prev" ] ||
  fail "after the fallback: $(ls "$tmp/killed" | tr '\n' ' ')"
grep -q "resuming from $tmp/killed/$prev (step $((10#${prev#step-})))" "$tmp/corrupt.out" || fail "did not fall back to $prev"
cmp "$tmp/straight/$last_dir/model.safetensors" "$tmp/killed/$last_dir/model.safetensors" ||
  fail "the step redone after the fallback differs"
cat "$tmp/corrupt.out" | head -3
[ "$fail" = 0 ] && echo "killed 100 times, resumed bitwise equal"
exit $fail
