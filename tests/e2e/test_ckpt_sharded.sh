#!/usr/bin/env bash
# tests/e2e/test_ckpt_sharded.sh: checkpoints of a plan whose state is described by pieces (issue 12), through
# ddprun on the reference executor (2 ranks as threads). $PIECE_PLAN rewrites a compiled 2-rank DDP plan
# (ToyModel, AdamW) so that its parameters are TF_SHAPE_ONLY with TF_PIECE masters and moments over both
# ranks (split at odd elements, some held by rank 1 alone, one left whole), so every rank writes its range
# of the one file. Checked: (1) its checkpoint is byte for byte the unsharded plan's (model, optimizer,
# MANIFEST); (2) the unsharded plan resumes from it and ends bitwise equal to an uninterrupted run; (2b) the same for
# strided pieces (piece_plan --runs: runs of rows);
# (3) 20 runs of the piece plan killed (SIGKILL) at random moments, many while a checkpoint is written, each
# into its own folder, never leave an incomplete checkpoint as the newest: the unsharded plan resumes from
# what each leaves, and from the furthest one ends bitwise equal; (4) a plan whose pieces leave a gap fails at start with one line, writing nothing;
# (5) where Open MPI is installed, the ranks as processes (mpirun -n 2) write the same files.
. "$(dirname "$0")/lib.sh"
e2e_tmp ckpt_sharded
[ -x "${PIECE_PLAN:-}" ] || die "PIECE_PLAN is not set to the piece_plan tool"
STEPS=3000 # no killed run (a checkpoint every step, at most 300 ms) reaches the end
last_dir=$(printf 'step-%06d' $STEPS)
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/" || exit 1
cat >"$tmp/toy2.lua" <<'LUA'
local models = require "models"
return schedule { model = models.toy(), data = { global_batch = 20, rows = 20, seed = 0 }, precision = "fp32",
                  optimizer = adamw { lr = 1e-3, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1 },
                  parallel = ddp { ranks = 2 }, steps = 3000, seed = 0 }
LUA
"$DDPC" "$tmp/toy2.lua" -o "$tmp/plain.bin" -q || die "toy2.lua does not compile"
"$PIECE_PLAN" "$tmp/plain.bin" "$tmp/pieces.bin" || die "piece_plan"
"$PIECE_PLAN" "$tmp/plain.bin" "$tmp/gap.bin" --gap >/dev/null || die "piece_plan --gap"
"$PIECE_PLAN" "$tmp/plain.bin" "$tmp/runs.bin" --runs >/dev/null || die "piece_plan --runs"
plain=("$DDPRUN" "$tmp/plain.bin" --device ref --quiet)
pieces=("$DDPRUN" "$tmp/pieces.bin" --device ref --quiet)
same_step() { # same_step DIR_A DIR_B STEP_DIR: the three files are equal
  for f in model.safetensors optimizer.safetensors MANIFEST; do
    cmp "$1/$3/$f" "$2/$3/$f" || fail "$3/$f: $1 and $2 differ"
  done
}

# (1) the same files
"${plain[@]}" --steps 6 --checkpoint-dir "$tmp/plain6" || die "unsharded run"
"${pieces[@]}" --steps 6 --checkpoint-dir "$tmp/pieces6" || die "piece run"
same_step "$tmp/plain6" "$tmp/pieces6" step-000006
find "$tmp/pieces6" -name '*tmp*' | grep -q . && fail "temporary file left behind"

# (2) the unsharded plan resumes from the piece plan's checkpoint
"${plain[@]}" --steps 12 --checkpoint-dir "$tmp/plain12" || die "unsharded run to 12"
"${plain[@]}" --steps 12 --checkpoint-dir "$tmp/pieces6" --resume || die "unsharded resume from the piece checkpoint"
same_step "$tmp/plain12" "$tmp/pieces6" step-000012

# (2b) strided pieces (plan format 6: the matrices' row blocks as runs of rows): the same files, and the
# unsharded plan resumes from them as from (2)'s
"$DDPRUN" "$tmp/runs.bin" --device ref --quiet --steps 6 --checkpoint-dir "$tmp/runs6" || die "strided piece run"
same_step "$tmp/plain6" "$tmp/runs6" step-000006
"${plain[@]}" --steps 12 --checkpoint-dir "$tmp/runs6" --resume || die "unsharded resume from the strided checkpoint"
same_step "$tmp/plain12" "$tmp/runs6" step-000012

# (3) killed while writing
t0=$SECONDS
"${plain[@]}" --steps $STEPS --checkpoint-dir "$tmp/straight" || die "uninterrupted run"
mid_write=0 best=-1 best_dir=""
for i in $(seq 1 20); do # each run its own folder: a run without --resume refuses a folder holding checkpoints
  k="$tmp/killed.$i"
  "${pieces[@]}" --steps $STEPS --save-every 1 --checkpoint-dir "$k" >"$tmp/out.$i" 2>&1 &
  pid=$!
  sleep "$(printf '0.%03d' $((RANDOM % 300)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  st=$?
  [ "$st" = 0 ] && die "run $i finished all $STEPS steps before its kill: make STEPS larger"
  [ "$st" = 137 ] || { cat "$tmp/out.$i"; die "run $i ended with status $st before its kill"; }
  ls -A "$k" 2>/dev/null | grep -q '^\.tmp-' && mid_write=$((mid_write + 1))
  newest=$(cd "$k" 2>/dev/null && ls -d step-* 2>/dev/null | sort | tail -1)
  [ -n "$newest" ] || continue
  # the newest step folder is complete: the unsharded plan resumes from it (0 steps more) without naming a bad
  # one, and the start removes the temporaries the kill left
  n=$((10#${newest#step-}))
  "${plain[@]}" --steps $n --checkpoint-dir "$k" --resume >"$tmp/check.$i" 2>&1 ||
    { cat "$tmp/check.$i"; fail "run $i: no resume from what the kill left"; continue; }
  grep -q 'not a complete checkpoint' "$tmp/check.$i" && fail "run $i: the newest $newest is incomplete"
  left=$(find "$k" -name '.tmp-*' -o -name '*.tmp.*' | wc -l)
  [ "$left" = 0 ] || fail "run $i: $left temporaries remain after a clean start"
  [ "$n" -gt "$best" ] && best=$n best_dir=$k
done
echo "($((SECONDS - t0)) s) 20 kills: $mid_write left a temporary checkpoint folder; newest step $best"
[ "$best" -ge 0 ] || die "no kill left a complete checkpoint: the kills come too early"
"${plain[@]}" --steps $STEPS --checkpoint-dir "$best_dir" --resume --keep-checkpoints 2 >"$tmp/final.out" 2>&1 ||
  { cat "$tmp/final.out"; die "the unsharded resume after the kills failed"; }
same_step "$tmp/straight" "$best_dir" "$last_dir"
[ "$mid_write" -gt 0 ] || fail "no kill landed during a checkpoint write: the test did not test that"

# (4) a gap in the pieces: one line at start, nothing written
if "$DDPRUN" "$tmp/gap.bin" --device ref --steps 2 --checkpoint-dir "$tmp/gap" >"$tmp/gap.out" 2>"$tmp/gap.err"; then
  fail "a plan whose pieces leave a gap ran"
fi
grep -q "checkpoint: the plan's pieces of 'fc1.weight' (100 elements) leave elements \[99, 100) in no piece" "$tmp/gap.err" ||
  fail "the gap is not named: $(cat "$tmp/gap.err")"
grep -q "^step" "$tmp/gap.out" && fail "the gap plan trained before failing"
[ -z "$(ls -A "$tmp/gap" 2>/dev/null)" ] || fail "the gap plan wrote into its checkpoint folder: $(ls -A "$tmp/gap")"
# (5) ranks as processes (Open MPI, where installed): each process writes its range of the same file
if command -v mpirun >/dev/null; then
  [ -n "${LSAN_OPTIONS:-}" ] && export LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0" # as test_mpi.sh
  timeout 120 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
    -n 2 "${pieces[@]}" --steps 6 --checkpoint-dir "$tmp/mpi6" >"$tmp/mpi.out" 2>&1 ||
    { cat "$tmp/mpi.out"; die "the piece plan under mpirun -n 2"; }
  same_step "$tmp/plain6" "$tmp/mpi6" step-000006
else
  echo "(mpirun not installed: the processes case is not run)"
fi

[ "$fail" = 0 ] && echo "sharded checkpoints: the unsharded bytes, resumable unsharded, crash-consistent"
exit $fail
