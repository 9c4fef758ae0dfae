#!/usr/bin/env bash
# tests/e2e/test_ckpt_layout.sh: the checkpoint folder's rules (docs/CHECKPOINTS.md) on ToyModel (SGD, 1 rank):
# --keep-checkpoints 1 / 0, a newest step folder without MANIFEST or with a wrong-sized file is named and
# skipped, folders named otherwise (step-9) are not checkpoints, a folder of the flat layout of older ddprun still resumes, --save-initial needs a folder, and
# --resume of a folder without a complete checkpoint is one clear error; the start removes only its own
# temporaries; a finished run resumed again runs nothing and says so.
. "$(dirname "$0")/lib.sh"
e2e_tmp ckpt_layout
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/toy.bin" -q || die "toy does not compile"
run=("$DDPRUN" "$tmp/toy.bin" --device ref)
steps_in() { (cd "$1" && ls -d step-* 2>/dev/null | tr '\n' ' '); }

"${run[@]}" --steps 4 --save-every 1 --save-initial --keep-checkpoints 1 --checkpoint-dir "$tmp/k1" -q || die "keep 1"
[ "$(steps_in "$tmp/k1")" = "step-000004 " ] || fail "--keep-checkpoints 1 left: $(steps_in "$tmp/k1")"
"${run[@]}" --steps 4 --save-every 1 --save-initial --keep-checkpoints 0 --checkpoint-dir "$tmp/k0" -q || die "keep 0"
[ "$(steps_in "$tmp/k0")" = "step-000000 step-000001 step-000002 step-000003 step-000004 " ] ||
  fail "--keep-checkpoints 0 left: $(steps_in "$tmp/k0")"
"${run[@]}" --steps 4 --save-every 1 --checkpoint-dir "$tmp/k2" >"$tmp/k2.out" || die "default keep"
[ "$(steps_in "$tmp/k2")" = "step-000003 step-000004 " ] || fail "the default keeps 2: $(steps_in "$tmp/k2")"
grep -q "^checkpoint written: $tmp/k2/step-000003 (step 3)$" "$tmp/k2.out" || fail "no 'checkpoint written' line"

# a newest folder without MANIFEST (not ours: it was never renamed into place by ddprun) is skipped
mkdir "$tmp/k0/step-000009" && cp "$tmp/k0/step-000004/model.safetensors" "$tmp/k0/step-000009/"
"${run[@]}" --steps 5 --checkpoint-dir "$tmp/k0" --resume >"$tmp/nomf.out" 2>&1 || { cat "$tmp/nomf.out"; die "resume"; }
grep -q "step-000009 is not a complete checkpoint (.*MANIFEST: cannot open" "$tmp/nomf.out" || fail "no MANIFEST: not named"
grep -q "resuming from $tmp/k0/step-000004 (step 4)" "$tmp/nomf.out" || fail "did not fall back to step 4"
rm -rf "$tmp/k0/step-000009" "$tmp/k0/damaged-step-000009"
# folders not named as ddprun names them (step-9, step-0000010) are not checkpoints: not listed, not named
cp -r "$tmp/k0/step-000004" "$tmp/k0/step-9" && cp -r "$tmp/k0/step-000004" "$tmp/k0/step-0000010"
"${run[@]}" --steps 5 --checkpoint-dir "$tmp/k0" --resume >"$tmp/names.out" 2>&1 || { cat "$tmp/names.out"; die "resume"; }
grep -q "resuming from $tmp/k0/step-000005 (step 5)" "$tmp/names.out" && ! grep -q "not a complete" "$tmp/names.out" ||
  fail "other step-* names: $(cat "$tmp/names.out")"
[ -d "$tmp/k0/step-9" ] && [ -d "$tmp/k0/step-0000010" ] || fail "a folder of another name was moved or removed"
rm -rf "$tmp/k0/step-9" "$tmp/k0/step-0000010"
# a file of the wrong size
printf 'x' >>"$tmp/k0/step-000005/optimizer.safetensors"
"${run[@]}" --steps 5 --checkpoint-dir "$tmp/k0" --resume >"$tmp/size.out" 2>&1 || { cat "$tmp/size.out"; die "resume"; }
grep -q "optimizer.safetensors: [0-9]* bytes, MANIFEST says" "$tmp/size.out" || fail "a wrong size is not named"
grep -q "resuming from $tmp/k0/step-000004 (step 4)" "$tmp/size.out" || fail "did not fall back past the bad size"

# MANIFESTs that do not make a checkpoint: naming another step, listing no file, a file outside the folder,
# world 0; each is named and moved aside, and the resume falls back to the good step 4
mf="$tmp/mf"
mkdir -p "$mf" && cp -r "$tmp/k1/step-000004" "$mf/"
for n in 6 7 8 9; do cp -r "$mf/step-000004" "$mf/step-00000$n"; done
sed -i 's/^step 4$/step 4/' "$mf/step-000006/MANIFEST"
sed -i '/^file /d' "$mf/step-000007/MANIFEST"
sed -i 's/^file model.safetensors/file ..\/step-000004\/model.safetensors/' "$mf/step-000008/MANIFEST"
sed -i 's/^world 1$/world 0/' "$mf/step-000009/MANIFEST"
"${run[@]}" --steps 5 --checkpoint-dir "$mf" --resume >"$tmp/mf.out" 2>&1 || { cat "$tmp/mf.out"; die "resume past bad MANIFESTs"; }
grep -q "step-000006 is not a complete checkpoint (its MANIFEST says step 4)" "$tmp/mf.out" || fail "a MANIFEST of another step: $(cat "$tmp/mf.out")"
grep -q "step-000007 is not a complete checkpoint (.*MANIFEST: lists no files)" "$tmp/mf.out" || fail "a MANIFEST of no files"
grep -q "step-000008 is not a complete checkpoint (.*MANIFEST: malformed line 'file ../step-000004" "$tmp/mf.out" ||
  fail "a MANIFEST naming a file outside its folder"
grep -q "step-000009 is not a complete checkpoint (.*MANIFEST: no world line)" "$tmp/mf.out" || fail "a MANIFEST of world 0"
grep -q "resuming from $mf/step-000004 (step 4)" "$tmp/mf.out" || fail "did not fall back to step 4: $(cat "$tmp/mf.out")"
# a folder and MANIFEST of step 6 holding step 4's files: refused, naming the step the files say (a resume
# at the files' step would take the wrong learning rate and data position)
mkdir -p "$tmp/mixed" && cp -r "$tmp/k1/step-000004" "$tmp/mixed/step-000006"
sed -i 's/^step 4$/step 6/' "$tmp/mixed/step-000006/MANIFEST"
if "${run[@]}" --checkpoint-dir "$tmp/mixed" --resume 2>"$tmp/err" >/dev/null; then fail "resumed files of another step"; fi
grep -q "$tmp/mixed/step-000006: its files say step 4" "$tmp/err" || fail "files of another step: $(cat "$tmp/err")"
# step folders, all broken, beside a flat model.safetensors: no complete checkpoint (the flat layout is read
# only where there is no step folder at all)
mkdir -p "$tmp/allbad/step-000003" && cp "$tmp/k1/step-000004/"*.safetensors "$tmp/allbad/"
if "${run[@]}" --checkpoint-dir "$tmp/allbad" --resume 2>"$tmp/err" >/dev/null; then fail "resumed the flat file beside broken step folders"; fi
grep -q "$tmp/allbad: no complete checkpoint to resume from" "$tmp/err" || fail "all broken: $(cat "$tmp/err")"

# the flat layout of older ddprun
mkdir -p "$tmp/flat" && cp "$tmp/k1/step-000004/"*.safetensors "$tmp/flat/"
"${run[@]}" --steps 5 --checkpoint-dir "$tmp/flat" --resume >"$tmp/flat.out" 2>&1 || { cat "$tmp/flat.out"; die "flat resume"; }
grep -q "resuming from $tmp/flat (step 4)" "$tmp/flat.out" || fail "the flat layout does not resume"
[ -f "$tmp/flat/step-000005/MANIFEST" ] || fail "the flat resume did not write step-000005"

# refusals
mkdir -p "$tmp/empty"
if "${run[@]}" --checkpoint-dir "$tmp/empty" --resume 2>"$tmp/err"; then fail "resumed from an empty folder"; fi
grep -q "$tmp/empty: no complete checkpoint to resume from" "$tmp/err" || fail "empty folder: $(cat "$tmp/err")"
if "${run[@]}" --save-initial 2>"$tmp/err"; then fail "--save-initial without a folder ran"; fi
grep -q "save-initial needs --checkpoint-dir" "$tmp/err" || fail "--save-initial: $(cat "$tmp/err")"
if "${run[@]}" --checkpoint-dir "$tmp/x" --keep-checkpoints -1 2>"$tmp/err"; then fail "--keep-checkpoints -1 ran"; fi
grep -q "^ddprun: --keep-checkpoints: .-1. is not an integer in 0..1000000$" "$tmp/err" || fail "--keep-checkpoints -1: $(cat "$tmp/err")"
# the start removes only the temporaries ckpt_store.c names: a user's own .tmp-notes folder stays
mkdir -p "$tmp/k2/.tmp-notes" "$tmp/k2/.tmp-step-notes" "$tmp/k2/.tmp-step-000009-123"
"${run[@]}" --steps 5 --checkpoint-dir "$tmp/k2" --resume -q || fail "resume with temporaries"
[ -d "$tmp/k2/.tmp-notes" ] && [ -d "$tmp/k2/.tmp-step-notes" ] || fail "the start removed the user's .tmp-notes or .tmp-step-notes"
[ -e "$tmp/k2/.tmp-step-000009-123" ] && fail "the start left an interrupted checkpoint's .tmp-step-000009-123"
# a finished run resumed again: nothing runs, said once; asked for a trace it refuses (no step to trace)
before=$(steps_in "$tmp/k2") latest=$(cat "$tmp/k2/latest")
"${run[@]}" --steps 3 --checkpoint-dir "$tmp/k2" --resume >"$tmp/done.out" 2>&1 || fail "resume past --steps failed"
grep -q "^nothing to run: the checkpoint is at step 5 and the run ends at step 3$" "$tmp/done.out" ||
  fail "resume past --steps: $(cat "$tmp/done.out")"
# ... and writes nothing: no step-000003 holding step 5's weights, latest unchanged
[ "$(steps_in "$tmp/k2")" = "$before" ] && [ "$(cat "$tmp/k2/latest")" = "$latest" ] ||
  fail "resume past --steps wrote: $(steps_in "$tmp/k2") / latest $(cat "$tmp/k2/latest")"
# exactly at the checkpoint's step is nothing to run too, and --save-initial with --resume writes no step 0
"${run[@]}" --steps 5 --checkpoint-dir "$tmp/k2" --resume --save-initial >"$tmp/at.out" 2>&1 || fail "resume at the end failed"
grep -q "^nothing to run: the checkpoint is at step 5 and the run ends at step 5$" "$tmp/at.out" ||
  fail "resume at the last step: $(cat "$tmp/at.out")"
[ "$(steps_in "$tmp/k2")" = "$before" ] || fail "--resume --save-initial wrote: $(steps_in "$tmp/k2")"
printf 'earlier metrics\n' >"$tmp/keep.jsonl"
if "${run[@]}" --steps 3 --checkpoint-dir "$tmp/k2" --resume --trace "$tmp/t.json" --metrics "$tmp/keep.jsonl" -q \
  2>"$tmp/err"; then
  fail "resume past --steps with --trace succeeded"
fi
[ "$(cat "$tmp/keep.jsonl")" = "earlier metrics" ] || fail "the refused run emptied its --metrics file"
grep -q "\-\-trace: the checkpoint is at step 5 and the run ends at step 3, so no step runs to be traced$" "$tmp/err" ||
  fail "resume past --steps with --trace: $(cat "$tmp/err")"
[ "$fail" = 0 ] && echo "checkpoint folder rules hold"
exit $fail
