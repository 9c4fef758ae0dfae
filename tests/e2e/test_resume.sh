#!/usr/bin/env bash
# tests/e2e/test_resume.sh: 10 steps straight vs 5 steps + --resume + 5 steps give byte-identical checkpoints
# (model and optimizer), on the reference executor; and the checkpoint holds the PyTorch state-dict names.
# Layout: each checkpoint is DIR/step-NNNNNN/ (runtime/io/checkpoint.h); both runs end in step-000010.
. "$(dirname "$0")/lib.sh"
e2e_tmp resume
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny.lua" -o "$tmp/plan.bin" || exit 1
"$DDPRUN" "$tmp/plan.bin" --device ref --steps 10 --checkpoint-dir "$tmp/straight" --quiet || exit 1
"$DDPRUN" "$tmp/plan.bin" --device ref --steps 5 --checkpoint-dir "$tmp/split" --quiet || exit 1
"$DDPRUN" "$tmp/plan.bin" --device ref --steps 10 --checkpoint-dir "$tmp/split" --resume --quiet || exit 1
[ "$(cat "$tmp/straight/latest")" = step-000010 ] || die "straight/latest is not step-000010"
[ "$(cat "$tmp/split/latest")" = step-000010 ] || die "split/latest is not step-000010"
[ -d "$tmp/split/step-000005" ] || die "the step-5 checkpoint of the split run is gone (2 are kept)"
for f in model.safetensors optimizer.safetensors; do
  cmp "$tmp/straight/step-000010/$f" "$tmp/split/step-000010/$f" || die "$f differs after resume"
done
for name in token_embeddings.weight layers.0.attn.q_proj.weight layers.1.attn.output_proj.weight \
            layers.0.ln1.weight layers.0.ffn.w1.weight layers.0.ffn.w2.weight layers.0.ffn.w3.weight \
            layers.1.ln2.weight ln_final.weight lm_head.weight; do
  grep -qa "\"$name\"" "$tmp/straight/step-000010/model.safetensors" || die "$name missing"
done
find "$tmp/straight" "$tmp/split" -name '*tmp*' | grep -q . && die "temporary file left behind"
# a model checkpoint of another plan is refused
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/toy.bin" || exit 1
if "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/straight" --resume --quiet 2>"$tmp/err"; then
  die "resumed a toy plan from a transformer checkpoint"
fi
echo "refused: $(cat "$tmp/err")"
echo "resume is bitwise identical"
